package kubeboot

/*
#include <stdlib.h>
#include "kubeboot.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Capacities are the sizes of the agent's memory (see the core's
// `kubeboot::agent::Capacities`): bytes, but for ServingDNS, a count.
type Capacities struct {
	// Response is the work buffer: the largest request, response body or watch event.
	Response int
	// PEM: each CA bundle and certificate chain kept.
	PEM int
	// Key: the current client key (PEM) or its device reference.
	Key int
	// File: what one file step writes (a pair, a kubeconfig, the CA file).
	File int
	// Path: each path.
	Path int
	// ServingDNS: the serving certificate's DNS names (a count, at most 16).
	ServingDNS int
}

// HostCapacities are the hosts' defaults (what NewAgent(nil) takes).
func HostCapacities() Capacities {
	c := (*C.kubeboot_capacities)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_capacities{}))))
	defer C.free(unsafe.Pointer(c))
	C.kubeboot_capacities_host(c)
	return Capacities{Response: int(c.response), PEM: int(c.pem), Key: int(c.key), File: int(c.file),
		Path: int(c.path), ServingDNS: int(c.serving_dns)}
}

// c is a C copy of caps (free it); a negative capacity becomes 0 (too small).
func (caps Capacities) c() *C.kubeboot_capacities {
	c := (*C.kubeboot_capacities)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_capacities{}))))
	n := func(v int) C.size_t {
		if v < 0 {
			return 0
		}
		return C.size_t(v)
	}
	c.response, c.pem, c.key, c.file, c.path, c.serving_dns =
		n(caps.Response), n(caps.PEM), n(caps.Key), n(caps.File), n(caps.Path), n(caps.ServingDNS)
	return c
}

// Capacity names one of the Capacities.
type Capacity uint32

const (
	CapacityNone       Capacity = C.KUBEBOOT_CAPACITY_NONE
	CapacityResponse   Capacity = C.KUBEBOOT_CAPACITY_RESPONSE
	CapacityPEM        Capacity = C.KUBEBOOT_CAPACITY_PEM
	CapacityKey        Capacity = C.KUBEBOOT_CAPACITY_KEY
	CapacityFile       Capacity = C.KUBEBOOT_CAPACITY_FILE
	CapacityPath       Capacity = C.KUBEBOOT_CAPACITY_PATH
	CapacityServingDNS Capacity = C.KUBEBOOT_CAPACITY_SERVING_DNS
	// CapacityMemory: the memory as a whole.
	CapacityMemory Capacity = C.KUBEBOOT_CAPACITY_MEMORY
)

func (c Capacity) String() string {
	switch c {
	case CapacityNone:
		return "none"
	case CapacityResponse:
		return "response"
	case CapacityPEM:
		return "pem"
	case CapacityKey:
		return "key"
	case CapacityFile:
		return "file"
	case CapacityPath:
		return "path"
	case CapacityServingDNS:
		return "serving-dns"
	case CapacityMemory:
		return "memory"
	}
	return fmt.Sprintf("capacity(%d)", uint32(c))
}

// CapacityError is a capacity too small for what it must hold; errors.Is(err, ErrTooLarge).
type CapacityError struct {
	Which Capacity
	Err   *Error
}

func (e *CapacityError) Error() string { return e.Err.Error() + ": capacity " + e.Which.String() }

// Unwrap is the library's error (too-large).
func (e *CapacityError) Unwrap() error { return e.Err }

// Check checks the rules between the capacities (each large enough for the smallest thing it
// must hold): nil, or a *CapacityError naming the first that is too small.
func (caps Capacities) Check() error {
	c := caps.c()
	defer C.free(unsafe.Pointer(c))
	which := (*C.kubeboot_capacity)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_capacity(0)))))
	defer C.free(unsafe.Pointer(which))
	r := C.kubeboot_capacities_check(c, which)
	if uint32(r) == CodeOK {
		return nil
	}
	err, _ := newError(r, "").(*Error)
	return &CapacityError{Which: Capacity(*which), Err: err}
}

// AgentSize is the bytes of memory an agent with caps takes (kubeboot_agent_size).
func (caps Capacities) AgentSize() (int, error) {
	if err := caps.Check(); err != nil {
		return 0, err
	}
	c := caps.c()
	defer C.free(unsafe.Pointer(c))
	n := (*C.size_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.size_t(0)))))
	defer C.free(unsafe.Pointer(n))
	if err := check(C.kubeboot_agent_size(c, n)); err != nil {
		return 0, err
	}
	return int(*n), nil
}
