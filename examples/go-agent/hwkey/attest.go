package hwkey

import (
	"fmt"

	"github.com/google/go-tpm/tpm2"
)

// attestationKeyTemplate is the TPM's attestation key, as the Rust side derives it
// (hwkey/src/tpm/attest.rs): a primary key of the endorsement hierarchy, ECC P-256,
// restricted|sign|fixedTPM|fixedParent|sensitiveDataOrigin|userWithAuth, ECDSA with SHA-256,
// empty unique. The same TPM derives the same key every time; `kubeboot device provision` had the
// factory CA certify it.
func attestationKeyTemplate() tpm2.TPMTPublic {
	return tpm2.TPMTPublic{
		Type:    tpm2.TPMAlgECC,
		NameAlg: tpm2.TPMAlgSHA256,
		ObjectAttributes: tpm2.TPMAObject{FixedTPM: true, FixedParent: true, SensitiveDataOrigin: true,
			UserWithAuth: true, Restricted: true, SignEncrypt: true},
		Parameters: tpm2.NewTPMUPublicParms(tpm2.TPMAlgECC, &tpm2.TPMSECCParms{
			Symmetric: tpm2.TPMTSymDefObject{Algorithm: tpm2.TPMAlgNull},
			Scheme: tpm2.TPMTECCScheme{Scheme: tpm2.TPMAlgECDSA,
				Details: tpm2.NewTPMUAsymScheme(tpm2.TPMAlgECDSA, &tpm2.TPMSSigSchemeECDSA{HashAlg: tpm2.TPMAlgSHA256})},
			CurveID: tpm2.TPMECCNistP256,
			KDF:     tpm2.TPMTKDFScheme{Scheme: tpm2.TPMAlgNull},
		}),
		Unique: tpm2.NewTPMUPublicID(tpm2.TPMAlgECC, &tpm2.TPMSECCPoint{}),
	}
}

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
	ak, err := tpm2.CreatePrimary{PrimaryHandle: tpm2.TPMRHEndorsement,
		InPublic: tpm2.New2B(attestationKeyTemplate())}.Execute(t)
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
