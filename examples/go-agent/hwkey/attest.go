package hwkey

import (
	"fmt"

	"github.com/google/go-tpm/tpm2"
)

// tpmCertify is TPM2_Certify of the reference's key by the attestation key over qualifying:
// the TPMS_ATTEST and TPMT_SIGNATURE as the TPM marshals them. Both handles are flushed.
func tpmCertify(tcti string, reference, qualifying []byte) ([]byte, []byte, error) {
	b, err := readBlob(reference)
	if err != nil {
		return nil, nil, fmt.Errorf("tpm %s: %v", tcti, err)
	}
	t, err := connect(tcti)
	if err != nil {
		return nil, nil, err
	}
	defer t.close()
	key, err := t.load(b)
	if err != nil {
		return nil, nil, err
	}
	defer t.flush(key.ObjectHandle)
	// The attestation key: a primary key of the endorsement hierarchy from a fixed template, as
	// the Rust side derives it (hwkey/src/tpm/attest.rs); the same TPM derives the same key every
	// time, and `kubeboot device provision` had the factory CA certify it.
	ak, err := tpm2.CreatePrimary{PrimaryHandle: tpm2.TPMRHEndorsement,
		InPublic: tpm2.New2B(signingKeyTemplate(true))}.Execute(t)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: creating the attestation key: %v", t.name, err)
	}
	defer t.flush(ak.ObjectHandle)
	rsp, err := tpm2.Certify{
		ObjectHandle:   tpm2.AuthHandle{Handle: key.ObjectHandle, Name: key.Name, Auth: tpm2.PasswordAuth(nil)},
		SignHandle:     tpm2.AuthHandle{Handle: ak.ObjectHandle, Name: ak.Name, Auth: tpm2.PasswordAuth(nil)},
		QualifyingData: tpm2.TPM2BData{Buffer: qualifying},
		InScheme:       tpm2.TPMTSigScheme{Scheme: tpm2.TPMAlgNull},
	}.Execute(t)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: TPM2_Certify: %v", t.name, err)
	}
	return rsp.CertifyInfo.Bytes(), tpm2.Marshal(rsp.Signature), nil
}
