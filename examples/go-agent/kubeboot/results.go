// Code generated from include/kubeboot.h by TestResultConstantsAreTheHeader; DO NOT EDIT.
// Regenerate: KUBEBOOT_BLESS=1 go test -run TestResultConstantsAreTheHeader ./kubeboot

package kubeboot

/*
#include "kubeboot.h"
*/
import "C"

// Result codes of libkubeboot (stable; equal to `kubeboot::Error::code()`), one per
// KUBEBOOT_RESULT_* of the C header, with the header's values.
const (
	CodeOK                          uint32 = C.KUBEBOOT_RESULT_OK                              // 0
	CodeNullParameter               uint32 = C.KUBEBOOT_RESULT_NULL_PARAMETER                  // 1
	CodePanic                       uint32 = C.KUBEBOOT_RESULT_PANIC                           // 2
	CodeInsufficientSize            uint32 = C.KUBEBOOT_RESULT_INSUFFICIENT_SIZE               // 3
	CodeInvalidUTF8                 uint32 = C.KUBEBOOT_RESULT_INVALID_UTF8                    // 4
	CodeInvalidParameter            uint32 = C.KUBEBOOT_RESULT_INVALID_PARAMETER               // 5
	CodeUnknownError                uint32 = C.KUBEBOOT_RESULT_UNKNOWN_ERROR                   // 6
	CodePoolExhausted               uint32 = C.KUBEBOOT_RESULT_POOL_EXHAUSTED                  // 7
	CodeStoreIO                     uint32 = C.KUBEBOOT_RESULT_STORE_IO                        // 10
	CodeStoreNoCertKeyFiles         uint32 = C.KUBEBOOT_RESULT_STORE_NO_CERT_KEY_FILES         // 11
	CodeStoreNoCertificates         uint32 = C.KUBEBOOT_RESULT_STORE_NO_CERTIFICATES           // 12
	CodeStoreMalformedCertificate   uint32 = C.KUBEBOOT_RESULT_STORE_MALFORMED_CERTIFICATE     // 13
	CodeStoreMalformedKey           uint32 = C.KUBEBOOT_RESULT_STORE_MALFORMED_KEY             // 14
	CodeStoreUnsupportedKey         uint32 = C.KUBEBOOT_RESULT_STORE_UNSUPPORTED_KEY           // 15
	CodeStoreKeyMismatch            uint32 = C.KUBEBOOT_RESULT_STORE_KEY_MISMATCH              // 16
	CodeStoreCurrentNotSymlink      uint32 = C.KUBEBOOT_RESULT_STORE_CURRENT_NOT_SYMLINK       // 17
	CodeStoreUpdatedNotSymlink      uint32 = C.KUBEBOOT_RESULT_STORE_UPDATED_NOT_SYMLINK       // 18
	CodeStoreReadBackMismatch       uint32 = C.KUBEBOOT_RESULT_STORE_READ_BACK_MISMATCH        // 19
	CodeStoreInvalidPrefix          uint32 = C.KUBEBOOT_RESULT_STORE_INVALID_PREFIX            // 20
	CodeStoreInvalidTimestamp       uint32 = C.KUBEBOOT_RESULT_STORE_INVALID_TIMESTAMP         // 21
	CodeStoreKeyGeneration          uint32 = C.KUBEBOOT_RESULT_STORE_KEY_GENERATION            // 22
	CodeStoreNotFound               uint32 = C.KUBEBOOT_RESULT_STORE_NOT_FOUND                 // 23
	CodeStoreFileTooLarge           uint32 = C.KUBEBOOT_RESULT_STORE_FILE_TOO_LARGE            // 24
	CodeStorePermissionDenied       uint32 = C.KUBEBOOT_RESULT_STORE_PERMISSION_DENIED         // 25
	CodeInvalidToken                uint32 = C.KUBEBOOT_RESULT_INVALID_TOKEN                   // 100
	CodeInvalidTokenId              uint32 = C.KUBEBOOT_RESULT_INVALID_TOKEN_ID                // 101
	CodeInvalidSecretName           uint32 = C.KUBEBOOT_RESULT_INVALID_SECRET_NAME             // 102
	CodeInvalidGroup                uint32 = C.KUBEBOOT_RESULT_INVALID_GROUP                   // 103
	CodeInvalidUsage                uint32 = C.KUBEBOOT_RESULT_INVALID_USAGE                   // 104
	CodeInvalidExpiration           uint32 = C.KUBEBOOT_RESULT_INVALID_EXPIRATION              // 105
	CodeTokenExpired                uint32 = C.KUBEBOOT_RESULT_TOKEN_EXPIRED                   // 106
	CodeTokenNotForAuthentication   uint32 = C.KUBEBOOT_RESULT_TOKEN_NOT_FOR_AUTHENTICATION    // 107
	CodeTokenMismatch               uint32 = C.KUBEBOOT_RESULT_TOKEN_MISMATCH                  // 108
	CodeInvalidAuthFileLine         uint32 = C.KUBEBOOT_RESULT_INVALID_AUTH_FILE_LINE          // 109
	CodeInsufficientEntropy         uint32 = C.KUBEBOOT_RESULT_INSUFFICIENT_ENTROPY            // 110
	CodeMalformedKey                uint32 = C.KUBEBOOT_RESULT_MALFORMED_KEY                   // 200
	CodeUnsupportedKey              uint32 = C.KUBEBOOT_RESULT_UNSUPPORTED_KEY                 // 201
	CodeBadEntropy                  uint32 = C.KUBEBOOT_RESULT_BAD_ENTROPY                     // 202
	CodeInvalidKeyReference         uint32 = C.KUBEBOOT_RESULT_INVALID_KEY_REFERENCE           // 203
	CodeKeyDevice                   uint32 = C.KUBEBOOT_RESULT_KEY_DEVICE                      // 204
	CodeInvalidNodeName             uint32 = C.KUBEBOOT_RESULT_INVALID_NODE_NAME               // 300
	CodeInvalidDNSName              uint32 = C.KUBEBOOT_RESULT_INVALID_DNS_NAME                // 301
	CodeInvalidIPAddress            uint32 = C.KUBEBOOT_RESULT_INVALID_IP_ADDRESS              // 302
	CodeTooManySANs                 uint32 = C.KUBEBOOT_RESULT_TOO_MANY_SANS                   // 303
	CodeInvalidExpirationSeconds    uint32 = C.KUBEBOOT_RESULT_INVALID_EXPIRATION_SECONDS      // 304
	CodeSignerFailed                uint32 = C.KUBEBOOT_RESULT_SIGNER_FAILED                   // 305
	CodeMalformed                   uint32 = C.KUBEBOOT_RESULT_MALFORMED                       // 306
	CodeServingNeedsIP              uint32 = C.KUBEBOOT_RESULT_SERVING_NEEDS_IP                // 307
	CodeInvalidDNSPattern           uint32 = C.KUBEBOOT_RESULT_INVALID_DNS_PATTERN             // 308
	CodeInvalidKeyPolicy            uint32 = C.KUBEBOOT_RESULT_INVALID_KEY_POLICY              // 309
	CodeVerifyMalformed             uint32 = C.KUBEBOOT_RESULT_VERIFY_MALFORMED                // 400
	CodeVerifyUntrusted             uint32 = C.KUBEBOOT_RESULT_VERIFY_UNTRUSTED                // 401
	CodeVerifyBadSignature          uint32 = C.KUBEBOOT_RESULT_VERIFY_BAD_SIGNATURE            // 402
	CodeVerifyExpired               uint32 = C.KUBEBOOT_RESULT_VERIFY_EXPIRED                  // 403
	CodeVerifyNotYetValid           uint32 = C.KUBEBOOT_RESULT_VERIFY_NOT_YET_VALID            // 404
	CodeVerifyKeyMismatch           uint32 = C.KUBEBOOT_RESULT_VERIFY_KEY_MISMATCH             // 405
	CodeVerifySubjectMismatch       uint32 = C.KUBEBOOT_RESULT_VERIFY_SUBJECT_MISMATCH         // 406
	CodeVerifyWrongUsage            uint32 = C.KUBEBOOT_RESULT_VERIFY_WRONG_USAGE              // 407
	CodeVerifyIsCA                  uint32 = C.KUBEBOOT_RESULT_VERIFY_IS_CA                    // 408
	CodeVerifyUnsupportedAlgorithm  uint32 = C.KUBEBOOT_RESULT_VERIFY_UNSUPPORTED_ALGORITHM    // 409
	CodePolicyNotCertificateRequest uint32 = C.KUBEBOOT_RESULT_POLICY_NOT_CERTIFICATE_REQUEST  // 500
	CodePolicyBadSignature          uint32 = C.KUBEBOOT_RESULT_POLICY_BAD_SIGNATURE            // 501
	CodePolicyUnsupportedKey        uint32 = C.KUBEBOOT_RESULT_POLICY_UNSUPPORTED_KEY          // 502
	CodePolicyOrganization          uint32 = C.KUBEBOOT_RESULT_POLICY_ORGANIZATION             // 503
	CodePolicyCommonName            uint32 = C.KUBEBOOT_RESULT_POLICY_COMMON_NAME              // 504
	CodePolicyDNSSanNotAllowed      uint32 = C.KUBEBOOT_RESULT_POLICY_DNS_SAN_NOT_ALLOWED      // 505
	CodePolicyEmailSanNotAllowed    uint32 = C.KUBEBOOT_RESULT_POLICY_EMAIL_SAN_NOT_ALLOWED    // 506
	CodePolicyIPSanNotAllowed       uint32 = C.KUBEBOOT_RESULT_POLICY_IP_SAN_NOT_ALLOWED       // 507
	CodePolicyURISanNotAllowed      uint32 = C.KUBEBOOT_RESULT_POLICY_URI_SAN_NOT_ALLOWED      // 508
	CodePolicySanRequired           uint32 = C.KUBEBOOT_RESULT_POLICY_SAN_REQUIRED             // 509
	CodePolicyClientUsages          uint32 = C.KUBEBOOT_RESULT_POLICY_CLIENT_USAGES            // 510
	CodePolicyServingUsages         uint32 = C.KUBEBOOT_RESULT_POLICY_SERVING_USAGES           // 511
	CodePolicyUnknownUsage          uint32 = C.KUBEBOOT_RESULT_POLICY_UNKNOWN_USAGE            // 512
	CodePolicyDuplicateUsage        uint32 = C.KUBEBOOT_RESULT_POLICY_DUPLICATE_USAGE          // 513
	CodePolicyUsagesRequired        uint32 = C.KUBEBOOT_RESULT_POLICY_USAGES_REQUIRED          // 514
	CodePolicySigner                uint32 = C.KUBEBOOT_RESULT_POLICY_SIGNER                   // 515
	CodePolicyExpirationTooShort    uint32 = C.KUBEBOOT_RESULT_POLICY_EXPIRATION_TOO_SHORT     // 516
	CodePolicyRequester             uint32 = C.KUBEBOOT_RESULT_POLICY_REQUESTER                // 517
	CodePolicyNodeMismatch          uint32 = C.KUBEBOOT_RESULT_POLICY_NODE_MISMATCH            // 518
	CodePolicyExtraPemData          uint32 = C.KUBEBOOT_RESULT_POLICY_EXTRA_PEM_DATA           // 519
	CodePolicyKeyNotAllowed         uint32 = C.KUBEBOOT_RESULT_POLICY_KEY_NOT_ALLOWED          // 520
	CodePolicyExpirationTooLong     uint32 = C.KUBEBOOT_RESULT_POLICY_EXPIRATION_TOO_LONG      // 521
	CodePolicyOtherSanNotAllowed    uint32 = C.KUBEBOOT_RESULT_POLICY_OTHER_SAN_NOT_ALLOWED    // 522
	CodePolicyIPSanNotNodeAddress   uint32 = C.KUBEBOOT_RESULT_POLICY_IP_SAN_NOT_NODE_ADDRESS  // 523
	CodePolicyDNSSanNotNodeAddress  uint32 = C.KUBEBOOT_RESULT_POLICY_DNS_SAN_NOT_NODE_ADDRESS // 524
	CodePolicyNodeNoAddresses       uint32 = C.KUBEBOOT_RESULT_POLICY_NODE_NO_ADDRESSES        // 525
	CodePolicyNodeNotFound          uint32 = C.KUBEBOOT_RESULT_POLICY_NODE_NOT_FOUND           // 526
	CodePolicyNotAuthorized         uint32 = C.KUBEBOOT_RESULT_POLICY_NOT_AUTHORIZED           // 527
	CodeInvalidPin                  uint32 = C.KUBEBOOT_RESULT_INVALID_PIN                     // 600
	CodePinMismatch                 uint32 = C.KUBEBOOT_RESULT_PIN_MISMATCH                    // 601
	CodeUnauthorized                uint32 = C.KUBEBOOT_RESULT_UNAUTHORIZED                    // 700
	CodeForbidden                   uint32 = C.KUBEBOOT_RESULT_FORBIDDEN                       // 701
	CodeCSRDenied                   uint32 = C.KUBEBOOT_RESULT_CSR_DENIED                      // 702
	CodeCSRFailed                   uint32 = C.KUBEBOOT_RESULT_CSR_FAILED                      // 703
	CodeCSRDeleted                  uint32 = C.KUBEBOOT_RESULT_CSR_DELETED                     // 704
	CodeCSRUIDChanged               uint32 = C.KUBEBOOT_RESULT_CSR_UID_CHANGED                 // 705
	CodeCSRIncompatible             uint32 = C.KUBEBOOT_RESULT_CSR_INCOMPATIBLE                // 706
	CodeTimeout                     uint32 = C.KUBEBOOT_RESULT_TIMEOUT                         // 707
	CodeHTTPStatus                  uint32 = C.KUBEBOOT_RESULT_HTTP_STATUS                     // 708
	CodeMalformedResponse           uint32 = C.KUBEBOOT_RESULT_MALFORMED_RESPONSE              // 709
	CodeTooLarge                    uint32 = C.KUBEBOOT_RESULT_TOO_LARGE                       // 710
	CodeInvalidState                uint32 = C.KUBEBOOT_RESULT_INVALID_STATE                   // 711
	CodeJWSInvalid                  uint32 = C.KUBEBOOT_RESULT_JWS_INVALID                     // 712
	CodeNoBootstrapCredentials      uint32 = C.KUBEBOOT_RESULT_NO_BOOTSTRAP_CREDENTIALS        // 800
	CodeNoCA                        uint32 = C.KUBEBOOT_RESULT_NO_CA                           // 801
	CodeInvalidConfig               uint32 = C.KUBEBOOT_RESULT_INVALID_CONFIG                  // 802
	CodeCABundleUnproven            uint32 = C.KUBEBOOT_RESULT_CA_BUNDLE_UNPROVEN              // 803
	CodeClockUntrusted              uint32 = C.KUBEBOOT_RESULT_CLOCK_UNTRUSTED                 // 804
	CodeInvalidDuration             uint32 = C.KUBEBOOT_RESULT_INVALID_DURATION                // 900
	CodeInvalidAddress              uint32 = C.KUBEBOOT_RESULT_INVALID_ADDRESS                 // 901
)
