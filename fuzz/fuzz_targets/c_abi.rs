//! The C ABI (`kubeboot-ffi`, the `extern "C" fn kubeboot_*` functions of ABI 0.4) called as a C
//! program could: an `arbitrary` script of calls with arbitrary bytes and lengths, NULL pointers
//! (also NULL with a non-zero length), zero lengths, short and exact output buffers, NULL or live
//! handles, out-of-range enum values. (Lengths larger than the buffer are UB by contract and are
//! never passed; every buffer is allocated at exactly its length so ASan sees overruns.) The
//! `*_generate` functions use the OS RNG; `kubeboot_csr_write` signs with a live key or through
//! a C callback that fails, writes arbitrary bytes, or signs with a live key. An agent is made
//! with `kubeboot_agent_new` (the hosts' capacities, a microcontroller's, the smallest, or any)
//! or in caller memory with `kubeboot_agent_init_in` (of the size `kubeboot_agent_size` gives,
//! longer, or too short; at any alignment), started from `kubeboot_agent_config_default` plus
//! any configuration, polled, and each tagged action answered with any of its `on_*` calls,
//! whatever it asked for (`kubeboot_agent_perform_file_action` is left out: it writes wherever
//! the fuzzed configuration points).
//!
//! Properties:
//! * no panic (libfuzzer-sys aborts on any panic, even one `catch_unwind` would catch), and every
//!   result is one of the codes `include/kubeboot.h` declares, never `KUBEBOOT_RESULT_PANIC`;
//! * output buffers: on `OK`, `*out_len ≤ len` and nothing after it is written; on
//!   `INSUFFICIENT_SIZE`, `*out_len > len` is the exact size (a buffer of that size succeeds with
//!   that length; for the CSR writer an upper bound) and the buffer is untouched; on any other
//!   error the buffer and `*out_len` are untouched; an `OK` output is reproduced exactly with a
//!   buffer of exactly `*out_len` bytes and one byte less is `INSUFFICIENT_SIZE`;
//! * out-parameters (`*out` handle, `kubeboot_verified`, `kubeboot_ca_pin`, points, signatures,
//!   capacities, sizes, the polled action) are written only on success; a NULL with a non-zero
//!   length never succeeds;
//! * capacities: `kubeboot_capacities_check` names the capacity the core's rules refuse (the
//!   same verdict as `Capacities::check`), `kubeboot_agent_size` succeeds exactly when the check
//!   does, `kubeboot_agent_init_in` succeeds with that many bytes at any alignment and is
//!   `TOO_LARGE` with fewer than the agent and its regions need (the memory then untouched), and
//!   never writes outside the memory it was given;
//! * `kubeboot_key_sign` signatures verify with the p256 crate against `kubeboot_key_public_point`;
//!   `kubeboot_result_name` is `"unknown"` exactly for codes the header does not declare;
//! * `kubeboot_verify_issued_scratch` gives the verdict of `kubeboot_verify_issued` whenever its
//!   scratch holds `kubeboot_verify_scratch_len` bytes, and `INSUFFICIENT_SIZE` with that size
//!   when it does not;
//! * `kubeboot_csr_write`: a client CSR made with a key passes `kubeboot_csr_check`; a client
//!   profile reads no SAN array; a signer that fails or returns bytes that are not a signature
//!   fails after the size query;
//! * the agent's one error channel: its `on_*` calls are `OK` unless given NULL with a length;
//!   every polled action's `kind` is declared, every string and byte view of its member is NULL
//!   exactly when empty and readable for its length (ASan), text is UTF-8, each field is set only
//!   for the kinds it belongs to (a file step's `prefix`, `updated`, `target`, a key operation's
//!   `device`, `label`, `message`), `FAILED` carries a declared non-`OK` result, and it stays
//!   answering after `DONE` / `FAILED`; with a key device (`tpm`, a token's URI, any bytes) its
//!   KEY answers (`kubeboot_agent_on_key_*`, `kubeboot_agent_sign_with` through a callback)
//!   are `OK` exactly when they answer the operation asked for, `INVALID_STATE` otherwise;
//! * the grammar's functions (`kubeboot_parse_duration`, `_parse_key_device`, `_check_ip`,
//!   `_check_bind_address`, `kubeboot_flag_refusal`) give the core's verdict on the same text;
//! * a watch quiet past its `idle_at` (`kubeboot_agent_on_stream_idle`) and the lines of
//!   `kubeboot_agent_next_event` keep the agent's one error channel; `idle_at` is set only for a
//!   watch;
//! * a PKCS#11 key reference the ABI writes reads back through `kubeboot_key_reference_uri`
//!   and `kubeboot_pkcs11_uri_attribute` with the object, id and type it was made for.
//!
//! Layout: one module per area of the ABI under `c_abi/` (`token`, `key`, `csr`, `verify`,
//! `kubeconfig`, `agent` with the capacities, the metrics and the KEY answers, `device`,
//! `grammar`, `misc`), each with its operations' arguments and their checks; `harness` holds what they
//! share. The order of [`Call`]'s variants and of each operation's fields is what the committed
//! inputs (`regressions/c_abi/`) decode through: keep it (add new operations at the end).
#![no_main]

#[path = "c_abi/agent.rs"]
mod agent;
#[path = "c_abi/csr.rs"]
mod csr;
#[path = "c_abi/device.rs"]
mod device;
#[path = "c_abi/grammar.rs"]
mod grammar;
#[path = "c_abi/harness.rs"]
mod harness;
#[path = "c_abi/key.rs"]
mod key;
#[path = "c_abi/kubeconfig.rs"]
mod kubeconfig;
#[path = "c_abi/misc.rs"]
mod misc;
#[path = "c_abi/token.rs"]
mod token;
#[path = "c_abi/verify.rs"]
mod verify;

use arbitrary::Arbitrary;
use harness::{Bytes, Handles};
use kubeboot_ffi::agent as fag;
use kubeboot_ffi::key as fkey;
use kubeboot_ffi::kubeconfig as fkc;
use kubeboot_ffi::token as ftok;
use libfuzzer_sys::fuzz_target;
use std::ptr::null_mut;

/// One call of the script.
#[derive(Arbitrary, Debug)]
enum Call {
    TokenParse(Bytes),
    TokenFromEntropy(Bytes),
    TokenText(token::TokenText),
    TokenValidateExtraGroups(Bytes),
    TokenSecretManifest(token::TokenSecretManifest),
    TokenGenerate(token::TokenGenerate),
    KeyFromPem(Bytes),
    KeyFromDer(Bytes),
    KeyFromEntropy(Bytes),
    KeyText(key::KeyText),
    KeySign(key::KeySign),
    KeyGenerate(key::KeyGenerate),
    CsrWrite(csr::CsrWrite),
    NodeCsrName(csr::NodeCsrName),
    CsrObjectJson(csr::CsrObjectJson),
    CsrCheck(csr::CsrCheck),
    ResultText(misc::ResultText),
    Version,
    VerifyIssued(verify::VerifyIssued),
    VerifyScratch(verify::VerifyScratch),
    CaPinParse(verify::CaPinParse),
    CaPinCheck(verify::CaPinCheck),
    CaPinsOfPem(verify::CaPinsOfPem),
    KubeconfigLoad(Bytes),
    KubeconfigGet(kubeconfig::KubeconfigGet),
    NodeKubeconfigWrite(kubeconfig::NodeKubeconfigWrite),
    MetricsCheckTextfile(Bytes),
    MetricsText(agent::MetricsText),
    Capacities(agent::Caps),
    Agent(agent::Agent),
    AgentDevice(agent::Agent, agent::KeyDevice),
    Pkcs11KeyReference(device::KeyReference),
    KeyReferenceUri(device::ReferenceUri),
    Pkcs11UriAttribute(device::UriAttribute),
    Grammar(grammar::Grammar),
}

fuzz_target!(|calls: Vec<Call>| {
    let mut hs = Handles::default();
    for call in calls.iter().take(24) {
        match call {
            Call::TokenParse(b) => token::parse(&mut hs, b),
            Call::TokenFromEntropy(b) => token::from_entropy(&mut hs, b),
            Call::TokenText(op) => token::text(&mut hs, op),
            Call::TokenValidateExtraGroups(b) => token::validate_extra_groups(b),
            Call::TokenSecretManifest(op) => token::secret_manifest(&mut hs, op),
            Call::TokenGenerate(op) => token::generate(&mut hs, op),
            Call::KeyFromPem(b) => key::from_pem(&mut hs, b),
            Call::KeyFromDer(b) => key::from_der(&mut hs, b),
            Call::KeyFromEntropy(b) => key::from_entropy(&mut hs, b),
            Call::KeyText(op) => key::text(&mut hs, op),
            Call::KeySign(op) => key::sign(&mut hs, op),
            Call::KeyGenerate(op) => key::generate(&mut hs, op),
            Call::CsrWrite(op) => csr::write(&mut hs, op),
            Call::NodeCsrName(op) => csr::node_csr_name(&mut hs, op),
            Call::CsrObjectJson(op) => csr::object_json(op),
            Call::CsrCheck(op) => csr::check(op),
            Call::ResultText(op) => misc::result_text(op),
            Call::Version => misc::version(),
            Call::VerifyIssued(op) => verify::issued(&mut hs, op),
            Call::VerifyScratch(op) => verify::scratch(&mut hs, op),
            Call::CaPinParse(op) => verify::pin_parse(op),
            Call::CaPinCheck(op) => verify::pin_check(op),
            Call::CaPinsOfPem(op) => verify::pins_of_pem(op),
            Call::KubeconfigLoad(b) => kubeconfig::load(&mut hs, b),
            Call::KubeconfigGet(op) => kubeconfig::get(&mut hs, op),
            Call::NodeKubeconfigWrite(op) => kubeconfig::node_write(op),
            Call::MetricsCheckTextfile(b) => agent::metrics_check_textfile(b),
            Call::MetricsText(op) => agent::metrics_text(op),
            Call::Capacities(op) => agent::capacities(op),
            Call::Agent(op) => agent::run(&mut hs, op, None),
            Call::AgentDevice(op, d) => agent::run(&mut hs, op, Some(d)),
            Call::Pkcs11KeyReference(op) => device::key_reference(op),
            Call::KeyReferenceUri(op) => device::reference_uri(op),
            Call::Pkcs11UriAttribute(op) => device::uri_attribute(op),
            Call::Grammar(op) => grammar::grammar(op),
        }
    }
    for t in hs.tokens {
        ftok::kubeboot_token_free(t);
    }
    for k in hs.keys {
        fkey::kubeboot_key_free(k);
    }
    for k in hs.kcs {
        fkc::kubeboot_kubeconfig_free(k);
    }
    ftok::kubeboot_token_free(null_mut());
    fkey::kubeboot_key_free(null_mut());
    fkc::kubeboot_kubeconfig_free(null_mut());
    fag::kubeboot_agent_free(null_mut());
});
