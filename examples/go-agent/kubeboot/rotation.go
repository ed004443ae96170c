package kubeboot

/*
#include "kubeboot.h"
*/
import "C"

import "time"

// RotationDeadline is when to rotate a certificate valid from notBefore to notAfter:
// notBefore + lifetime·(0.7 + 0.2·jitter/2³²) (seconds precision); notAfter for an empty or
// inverted window. Use a random jitter, the same for one certificate.
func RotationDeadline(notBefore, notAfter time.Time, jitter uint32) time.Time {
	return fromUnix(C.kubeboot_rotation_deadline(unix(notBefore), unix(notAfter), C.uint32_t(jitter)))
}

// RotationDue reports whether to rotate at now (always without a certificate or for an expired
// or empty window, else once the deadline for jitter has passed).
func RotationDue(hasCert bool, notBefore, notAfter time.Time, jitter uint32, now time.Time) bool {
	return bool(C.kubeboot_rotation_due(C.bool(hasCert), unix(notBefore), unix(notAfter), C.uint32_t(jitter), unix(now)))
}

// BackoffDelay is the wait after failed attempt number attempt (zero-based): 2 s, 4 s, 8 s,
// 16 s plus up to 10 % jitter, then a flat 32 s.
func BackoffDelay(attempt uint32, jitter uint32) time.Duration {
	return time.Duration(C.kubeboot_backoff_delay_ms(C.uint32_t(attempt), C.uint32_t(jitter))) * time.Millisecond
}
