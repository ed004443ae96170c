package kubeboot

/*
#include "kubeboot.h"
*/
import "C"

import "time"

// ActionKind names what Agent.Poll asks for, and so the one member of Action that is set.
type ActionKind uint32

const (
	// ActionRead: read Action.Read's file, answer OnRead (or PerformFileAction).
	ActionRead ActionKind = C.KUBEBOOT_ACTION_KIND_READ
	// ActionFile: do Action.File, answer OnFileDone (or PerformFileAction).
	ActionFile ActionKind = C.KUBEBOOT_ACTION_KIND_FILE
	// ActionEntropy: Action.Entropy CSPRNG bytes to OnEntropy (or PerformEntropy).
	ActionEntropy ActionKind = C.KUBEBOOT_ACTION_KIND_ENTROPY
	// ActionKey: do Action.Key in the device that holds the node key (PerformKeyAction).
	ActionKey ActionKind = C.KUBEBOOT_ACTION_KIND_KEY
	// ActionHTTP: send Action.HTTP, answer OnHTTPResponse / OnStreamData / OnTransportError.
	ActionHTTP ActionKind = C.KUBEBOOT_ACTION_KIND_HTTP
	// ActionSleep: nothing to do before Action.Sleep.
	ActionSleep ActionKind = C.KUBEBOOT_ACTION_KIND_SLEEP
	// ActionEvent: print Action.Event.Line.
	ActionEvent ActionKind = C.KUBEBOOT_ACTION_KIND_EVENT
	// ActionDone: finished; Action.Done says what the certificates are.
	ActionDone ActionKind = C.KUBEBOOT_ACTION_KIND_DONE
	// ActionFailed: stopped; Action.Failed says why.
	ActionFailed ActionKind = C.KUBEBOOT_ACTION_KIND_FAILED
)

// Action is what to do next: Kind and the one member it names (every other is zero).
type Action struct {
	Kind    ActionKind
	Read    *FileRead
	File    *FileStep
	Entropy int
	Key     *KeyRequest
	HTTP    *HTTPRequest
	Sleep   time.Time
	Event   *Event
	Done    *Outcome
	Failed  *Failure
}

// FileRole says what a file read is for.
type FileRole uint32

const (
	RoleKubeconfig          FileRole = C.KUBEBOOT_FILE_ROLE_KUBECONFIG
	RoleBootstrapKubeconfig FileRole = C.KUBEBOOT_FILE_ROLE_BOOTSTRAP_KUBECONFIG
	RoleClusterCA           FileRole = C.KUBEBOOT_FILE_ROLE_CLUSTER_CA
	RoleCABundle            FileRole = C.KUBEBOOT_FILE_ROLE_CA_BUNDLE
	// RoleClientCertificate: the node kubeconfig's client-certificate file.
	RoleClientCertificate FileRole = C.KUBEBOOT_FILE_ROLE_CLIENT_CERTIFICATE
	// RoleClientKey: the node kubeconfig's client-key file.
	RoleClientKey FileRole = C.KUBEBOOT_FILE_ROLE_CLIENT_KEY
	RoleTokenFile FileRole = C.KUBEBOOT_FILE_ROLE_TOKEN_FILE
	RoleKeyCache  FileRole = C.KUBEBOOT_FILE_ROLE_KEY_CACHE
	// RoleServingPair: the serving pair (kubelet-server-current.pem).
	RoleServingPair FileRole = C.KUBEBOOT_FILE_ROLE_SERVING_PAIR
)

// FileRead is a file to read whole (at most MaxLen bytes, following symlinks): answer its bytes,
// CodeStoreNotFound, CodeStoreFileTooLarge beyond MaxLen, or another CodeStore*.
type FileRead struct {
	Path   string
	Role   FileRole
	MaxLen int
}

// FileStepKind is a change to the node's files (see the C header's kubeboot_file_step_kind for
// what each must do; PerformFileAction does exactly that).
type FileStepKind uint32

const (
	StepRecover                  FileStepKind = C.KUBEBOOT_FILE_STEP_KIND_RECOVER
	StepCreateDir                FileStepKind = C.KUBEBOOT_FILE_STEP_KIND_CREATE_DIR
	StepWriteKeyCache            FileStepKind = C.KUBEBOOT_FILE_STEP_KIND_WRITE_KEY_CACHE
	StepWritePair                FileStepKind = C.KUBEBOOT_FILE_STEP_KIND_WRITE_PAIR
	StepSwapCurrent              FileStepKind = C.KUBEBOOT_FILE_STEP_KIND_SWAP_CURRENT
	StepWriteKubeconfig          FileStepKind = C.KUBEBOOT_FILE_STEP_KIND_WRITE_KUBECONFIG
	StepWriteBootstrapKubeconfig FileStepKind = C.KUBEBOOT_FILE_STEP_KIND_WRITE_BOOTSTRAP_KUBECONFIG
	StepRemoveKeyCache           FileStepKind = C.KUBEBOOT_FILE_STEP_KIND_REMOVE_KEY_CACHE
	StepRemoveDir                FileStepKind = C.KUBEBOOT_FILE_STEP_KIND_REMOVE_DIR
	StepWriteCA                  FileStepKind = C.KUBEBOOT_FILE_STEP_KIND_WRITE_CA
	// StepPrunePairs: remove the store's replaced pairs (Path: the cert dir, Prefix, Target:
	// the data file to keep).
	StepPrunePairs FileStepKind = C.KUBEBOOT_FILE_STEP_KIND_PRUNE_PAIRS
)

// FileStep is a change to the node's files, in the order the agent gives them.
type FileStep struct {
	Step FileStepKind
	// Name: "recover", "write-pair", "swap-current", ... (for messages).
	Name string
	// Path is the file or directory the step changes (SwapCurrent: the -current.pem link).
	Path string
	// Data is what a write writes when it is not Secret. Secret data (a pair, a key, a token)
	// is not copied into Go memory: do those steps with PerformFileAction.
	Data   []byte
	Secret bool
	// Prefix: StepRecover's and StepPrunePairs' store prefix (kubelet-client, kubelet-server).
	Prefix string
	// Updated, Target: StepSwapCurrent's -updated.pem link and the data file it points at;
	// Target: the data file StepPrunePairs keeps.
	Updated, Target string
}

// RequestKind is what an HTTP request is for.
type RequestKind uint32

const (
	RequestHealthz     RequestKind = C.KUBEBOOT_REQUEST_KIND_HEALTHZ
	RequestClusterInfo RequestKind = C.KUBEBOOT_REQUEST_KIND_CLUSTER_INFO
	// RequestTrustBundles: the ClusterTrustBundles of the apiserver's serving signer.
	RequestTrustBundles RequestKind = C.KUBEBOOT_REQUEST_KIND_TRUST_BUNDLES
	// RequestCAProbe: GET /healthz trusting only a new CA bundle; a failed handshake is
	// OnTransportError.
	RequestCAProbe   RequestKind = C.KUBEBOOT_REQUEST_KIND_CA_PROBE
	RequestCSRCreate RequestKind = C.KUBEBOOT_REQUEST_KIND_CREATE
	RequestCSRGet    RequestKind = C.KUBEBOOT_REQUEST_KIND_GET
	// RequestCSRWatch: a 200 answer is a stream for OnStreamData.
	RequestCSRWatch RequestKind = C.KUBEBOOT_REQUEST_KIND_WATCH
	// RequestSelfSubjectReview: POST a SelfSubjectReview presenting the connection's client
	// pair (the agent asks whether the apiserver takes a pair as the node).
	RequestSelfSubjectReview RequestKind = C.KUBEBOOT_REQUEST_KIND_SELF_SUBJECT_REVIEW
)

// Connection says where and how to connect; ID changes whenever anything else does.
type Connection struct {
	ID         uint32
	Server     string
	CAPEM      []byte
	Insecure   bool
	ServerName string
	// ClientCertPEM / ClientKeyPEM (secret): the certificate to present, if any.
	ClientCertPEM, ClientKeyPEM []byte
	// ClientKeyHolder: HolderSoftware (ClientKeyPEM is the key), or the device whose key
	// ClientKeyPEM's reference names (present it with KeyStore.Open's signer).
	ClientKeyHolder KeyHolder
}

// HTTPRequest is an HTTPS request of the agent.
type HTTPRequest struct {
	Conn                                     Connection
	Kind                                     RequestKind
	Method, Path, Authorization, ContentType string
	Accept, UserAgent                        string
	Body                                     []byte
	// GiveUpAt: answer OnTransportError when no response came by then.
	GiveUpAt time.Time
	// IdleAt: a watch stream still open and quiet at this time gets OnStreamIdle (and its
	// lines from NextEvent) without being ended; zero: never.
	IdleAt time.Time
}

// Event is a line to print.
type Event struct {
	// Step is the line's step (create, wait, stored, sleep, ...).
	Step string
	Line string
	// Update: Line is progress on the previous line's step (a long wait): on a terminal
	// overwrite the previous line with it, in a log print it as any other.
	Update bool
	// Ready: the credentials are usable and the agent sleeps or is done: a service is ready
	// (systemd's READY=1) at the first such event.
	Ready bool
}

// CertStatus is one certificate's state.
type CertStatus struct {
	Present                               bool
	NotBefore, NotAfter, RotationDeadline time.Time
}

// Outcome is what ActionDone reports.
type Outcome struct {
	Client, Serving CertStatus
}

// Failure is why the agent stopped: Err is an *Error (typed reason, detail), Line the line to
// print.
type Failure struct {
	Err  error
	Line string
}
