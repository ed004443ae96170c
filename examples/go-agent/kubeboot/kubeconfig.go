package kubeboot

/*
#include <stdlib.h>
#include "kubeboot.h"
*/
import "C"

import (
	"os"
	"path/filepath"
	"unsafe"
)

// Source says where a kubeconfig credential comes from.
type Source uint32

const (
	// SourceNone: not set (for the CA: the system roots).
	SourceNone Source = C.KUBEBOOT_SOURCE_NONE
	// SourceData: inline `*-data`, decoded (the Data field).
	SourceData Source = C.KUBEBOOT_SOURCE_DATA
	// SourceFile: a file path (the File field).
	SourceFile Source = C.KUBEBOOT_SOURCE_FILE
)

// Credential is a CA, client certificate or client key of a kubeconfig.
type Credential struct {
	Source Source
	// Data is the decoded PEM for SourceData.
	Data []byte
	// File is the path for SourceFile, as written, or absolute after Kubeconfig.ResolvePaths.
	File string
	// FileIsRelative reports that File was relative in the kubeconfig.
	FileIsRelative bool
}

// Kubeconfig is a kubeconfig resolved to its current context (everything copied into Go).
type Kubeconfig struct {
	ContextName, ClusterName, UserName, Namespace string
	Server                                        string
	TLSServerName                                 string
	InsecureSkipTLSVerify                         bool
	CA                                            Credential
	ClientCert                                    Credential
	ClientKey                                     Credential
	// Token is the bearer token (secret); TokenFile its file form.
	Token               string
	TokenFile           string
	TokenFileIsRelative bool
	// Dir is the directory of the file it was read from (ReadKubeconfig), else empty.
	Dir string
}

func goBytes(b C.kubeboot_bytes) []byte {
	if b.data == nil || b.len == 0 {
		return nil
	}
	return C.GoBytes(unsafe.Pointer(b.data), C.int(b.len))
}

func goStr(b C.kubeboot_bytes) string { return string(goBytes(b)) }

// ParseKubeconfig parses a kubeconfig (YAML as kubectl writes it, or JSON) and resolves its
// current context. ErrMalformed for unsupported YAML or a missing context, cluster, user or
// server.
func ParseKubeconfig(data []byte) (*Kubeconfig, error) {
	dp, dn, free := cBytes(data)
	defer free()
	var h *C.kubeboot_kubeconfig
	if err := check(C.kubeboot_kubeconfig_load(dp, dn, &h)); err != nil {
		return nil, err
	}
	defer C.kubeboot_kubeconfig_free(h)
	v := (*C.kubeboot_kubeconfig_view)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_kubeconfig_view{}))))
	defer C.free(unsafe.Pointer(v))
	if err := check(C.kubeboot_kubeconfig_get(h, v)); err != nil {
		return nil, err
	}
	return &Kubeconfig{
		ContextName:           goStr(v.context_name),
		ClusterName:           goStr(v.cluster_name),
		UserName:              goStr(v.user_name),
		Namespace:             goStr(v.context_namespace),
		Server:                goStr(v.server),
		TLSServerName:         goStr(v.tls_server_name),
		InsecureSkipTLSVerify: bool(v.insecure_skip_tls_verify),
		CA: Credential{Source: Source(v.ca_source), Data: goBytes(v.ca_data), File: goStr(v.ca_file),
			FileIsRelative: bool(v.ca_file_is_relative)},
		ClientCert: Credential{Source: Source(v.client_cert_source), Data: goBytes(v.client_cert_data),
			File: goStr(v.client_cert_file), FileIsRelative: bool(v.client_cert_file_is_relative)},
		ClientKey: Credential{Source: Source(v.client_key_source), Data: goBytes(v.client_key_data),
			File: goStr(v.client_key_file), FileIsRelative: bool(v.client_key_file_is_relative)},
		Token:               goStr(v.token),
		TokenFile:           goStr(v.token_file),
		TokenFileIsRelative: bool(v.token_file_is_relative),
	}, nil
}

// ReadKubeconfig reads and parses the kubeconfig at path and resolves its relative file paths
// against the file's directory (as clientcmd does).
func ReadKubeconfig(path string) (*Kubeconfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	kc, err := ParseKubeconfig(data)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	kc.ResolvePaths(dir)
	return kc, nil
}

// ResolvePaths makes relative file paths absolute against dir.
func (kc *Kubeconfig) ResolvePaths(dir string) {
	kc.Dir = dir
	for _, c := range []*Credential{&kc.CA, &kc.ClientCert, &kc.ClientKey} {
		if c.Source == SourceFile && c.FileIsRelative {
			c.File = filepath.Join(dir, c.File)
			c.FileIsRelative = false
		}
	}
	if kc.TokenFile != "" && kc.TokenFileIsRelative {
		kc.TokenFile = filepath.Join(dir, kc.TokenFile)
		kc.TokenFileIsRelative = false
	}
}

// Load returns the credential's PEM (Data, or the file's content).
func (c *Credential) Load() ([]byte, error) {
	switch c.Source {
	case SourceData:
		return c.Data, nil
	case SourceFile:
		return os.ReadFile(c.File)
	default:
		return nil, nil
	}
}

// NodeKubeconfig writes the kubelet's node kubeconfig (YAML): cluster `default-cluster` with
// server, the CA as the file caFile (make it absolute first) or, without one, as
// `certificate-authority-data` from caPEM, `insecure-skip-tls-verify` when insecure; user
// `default-auth` with client certificate and key `<certDir>/kubelet-client-current.pem`.
func NodeKubeconfig(server, caFile string, caPEM []byte, insecure bool, certDir string) ([]byte, error) {
	sp, sn, f1 := cStr(server)
	defer f1()
	fp, fn, f2 := cStr(caFile)
	defer f2()
	cp, cn, f3 := cBytes(caPEM)
	defer f3()
	dp, dn, f4 := cStr(certDir)
	defer f4()
	return outBytes(4096+2*len(caPEM), func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
		return C.kubeboot_node_kubeconfig_write(sp, sn, fp, fn, cp, cn, C.bool(insecure), dp, dn, (*C.char)(p), n, o)
	})
}
