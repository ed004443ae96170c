//! The C ABI (`kubeboot-ffi`, the `extern "C" fn kubeboot_*` functions) called as a C program
//! could: an `arbitrary` script of calls with arbitrary bytes and lengths, NULL pointers (also
//! NULL with a non-zero length), zero lengths, short and exact output buffers, NULL or live
//! handles, out-of-range enum values. (Lengths larger than the buffer are UB by contract and are
//! never passed; every buffer is allocated at exactly its length so ASan sees overruns.) The
//! `kubeboot_store_*` functions work in a fresh temporary directory per process (one of a few
//! subdirectories, some missing); the `*_generate` functions use the OS RNG; the external-signer
//! CSR functions get a callback that fails, writes arbitrary bytes, or signs with a live key.
//! An agent (`kubeboot_agent_new` with any configuration) is polled and each action answered
//! with any of its `on_*` calls, whatever it asked for (`kubeboot_agent_perform_file_action` is
//! left out: it writes wherever the fuzzed configuration points).
//!
//! Properties:
//! * no panic (libfuzzer-sys aborts on any panic, even one `catch_unwind` would catch), and every
//!   result is one of the codes `include/kubeboot.h` declares, never `KUBEBOOT_RESULT_PANIC`;
//! * output buffers: on `OK`, `*out_len ≤ len` and nothing after it is written; on
//!   `INSUFFICIENT_SIZE`, `*out_len > len` is the exact size (a buffer of that size succeeds with
//!   that length) and the buffer is untouched; on any other error the buffer and `*out_len` are
//!   untouched; an `OK` output is reproduced exactly with a buffer of exactly `*out_len` bytes
//!   and one byte less is `INSUFFICIENT_SIZE`;
//! * out-parameters (`*out` handle, `kubeboot_verified`, `kubeboot_ca_pin`, points, signatures)
//!   are written only on success; a NULL with a non-zero length never succeeds;
//! * `kubeboot_key_sign` signatures verify with the p256 crate against `kubeboot_key_public_point`;
//!   `kubeboot_result_name` is `"unknown"` exactly for codes the header does not declare;
//! * `kubeboot_verify_issued_scratch` gives the verdict of `kubeboot_verify_issued` whenever its
//!   scratch holds `kubeboot_verify_scratch_len` bytes, and `INSUFFICIENT_SIZE` with that size
//!   when it does not;
//! * a store operation that fails changes no file of the certificate directory;
//! * the agent's one error channel: its `on_*` calls are `OK` unless given NULL with a length;
//!   every pointer of a polled action is readable for its length (ASan), its static strings
//!   are NUL-terminated UTF-8, `FAILED` carries a declared non-`OK` result, and it stays
//!   answering after `DONE` / `FAILED`; with a key device (`tpm`, a token's URI, any bytes) its
//!   KEY answers (`kubeboot_agent_on_key_*`, `kubeboot_agent_sign_with` through a callback)
//!   are `OK` exactly when they answer the operation asked for, `INVALID_STATE` otherwise;
//! * a PKCS#11 key reference the ABI writes reads back through `kubeboot_key_reference_uri`
//!   and `kubeboot_pkcs11_uri_attribute` with the object, id and type it was made for.
//!
//! Layout: one module per area of the ABI under `ffi_abi/` (`token`, `key`, `csr`, `verify`,
//! `kubeconfig`, `store`, `engine`, `agent` with the metrics and the KEY answers, `device`,
//! `misc`), each with its operations'
//! arguments and their checks; `harness` holds what they share. The order of [`Call`]'s variants
//! and of each operation's fields is what the committed inputs (`regressions/ffi_abi/`) decode
//! through: keep it (add new operations at the end).
#![no_main]

#[path = "ffi_abi/agent.rs"]
mod agent;
#[path = "ffi_abi/csr.rs"]
mod csr;
#[path = "ffi_abi/device.rs"]
mod device;
#[path = "ffi_abi/engine.rs"]
mod engine;
#[path = "ffi_abi/harness.rs"]
mod harness;
#[path = "ffi_abi/key.rs"]
mod key;
#[path = "ffi_abi/kubeconfig.rs"]
mod kubeconfig;
#[path = "ffi_abi/misc.rs"]
mod misc;
#[path = "ffi_abi/store.rs"]
mod store;
#[path = "ffi_abi/token.rs"]
mod token;
#[path = "ffi_abi/verify.rs"]
mod verify;

use arbitrary::Arbitrary;
use harness::{Bytes, Handles};
use kubeboot_ffi::agent as fag;
use kubeboot_ffi::engine as feng;
use kubeboot_ffi::key as fkey;
use kubeboot_ffi::kubeconfig as fkc;
use kubeboot_ffi::store as fstore;
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
    KeyFromPem(Bytes),
    KeyFromDer(Bytes),
    KeyFromEntropy(Bytes),
    KeyText(key::KeyText),
    KeySign(key::KeySign),
    CsrClient(csr::CsrClient),
    CsrServing(csr::CsrServing),
    NodeCsrName(csr::NodeCsrName),
    CsrObjectJson(csr::CsrObjectJson),
    CsrCheck(csr::CsrCheck),
    ResultText(misc::ResultText),
    VerifyIssued(verify::VerifyIssued),
    CaPinParse(verify::CaPinParse),
    CaPinCheck(verify::CaPinCheck),
    CaPinsOfPem(verify::CaPinsOfPem),
    KubeconfigLoad(Bytes),
    KubeconfigGet(kubeconfig::KubeconfigGet),
    NodeKubeconfigWrite(kubeconfig::NodeKubeconfigWrite),
    Rotation(misc::Rotation),
    TokenGenerate(token::TokenGenerate),
    KeyGenerate(key::KeyGenerate),
    Version,
    CsrWithSigner(csr::CsrWithSigner),
    VerifyScratch(verify::VerifyScratch),
    StoreOpen(store::StoreOpen),
    StoreUpdate(store::StoreUpdate),
    StoreText(store::StoreText),
    StoreBootstrapKey(store::StoreBootstrapKey),
    StoreRemoveKeyCache(store::StoreRemoveKeyCache),
    StoreFree(store::StoreFree),
    Engine(engine::Engine),
    MetricsCheckTextfile(Bytes),
    MetricsText(agent::MetricsText),
    Agent(agent::Agent),
    AgentDevice(agent::Agent, agent::KeyDevice),
    Pkcs11KeyReference(device::KeyReference),
    KeyReferenceUri(device::ReferenceUri),
    Pkcs11UriAttribute(device::UriAttribute),
}

fuzz_target!(|calls: Vec<Call>| {
    let mut hs = Handles::default();
    // Each input starts from empty certificate directories (successful updates add files).
    if calls.iter().take(24).any(|c| matches!(c, Call::StoreOpen(_))) {
        store::reset();
    }
    for call in calls.iter().take(24) {
        match call {
            Call::TokenParse(b) => token::parse(&mut hs, b),
            Call::TokenFromEntropy(b) => token::from_entropy(&mut hs, b),
            Call::TokenText(op) => token::text(&mut hs, op),
            Call::TokenValidateExtraGroups(b) => token::validate_extra_groups(b),
            Call::TokenSecretManifest(op) => token::secret_manifest(&mut hs, op),
            Call::KeyFromPem(b) => key::from_pem(&mut hs, b),
            Call::KeyFromDer(b) => key::from_der(&mut hs, b),
            Call::KeyFromEntropy(b) => key::from_entropy(&mut hs, b),
            Call::KeyText(op) => key::text(&mut hs, op),
            Call::KeySign(op) => key::sign(&mut hs, op),
            Call::CsrClient(op) => csr::client(&mut hs, op),
            Call::CsrServing(op) => csr::serving(&mut hs, op),
            Call::NodeCsrName(op) => csr::node_csr_name(&mut hs, op),
            Call::CsrObjectJson(op) => csr::object_json(op),
            Call::CsrCheck(op) => csr::check(op),
            Call::ResultText(op) => misc::result_text(op),
            Call::VerifyIssued(op) => verify::issued(&mut hs, op),
            Call::CaPinParse(op) => verify::pin_parse(op),
            Call::CaPinCheck(op) => verify::pin_check(op),
            Call::CaPinsOfPem(op) => verify::pins_of_pem(op),
            Call::KubeconfigLoad(b) => kubeconfig::load(&mut hs, b),
            Call::KubeconfigGet(op) => kubeconfig::get(&mut hs, op),
            Call::NodeKubeconfigWrite(op) => kubeconfig::node_write(op),
            Call::Rotation(op) => misc::rotation(op),
            Call::TokenGenerate(op) => token::generate(&mut hs, op),
            Call::KeyGenerate(op) => key::generate(&mut hs, op),
            Call::Version => misc::version(),
            Call::CsrWithSigner(op) => csr::with_signer(&mut hs, op),
            Call::VerifyScratch(op) => verify::scratch(&mut hs, op),
            Call::StoreOpen(op) => store::open(&mut hs, op),
            Call::StoreUpdate(op) => store::update(&mut hs, op),
            Call::StoreText(op) => store::text(&mut hs, op),
            Call::StoreBootstrapKey(op) => store::bootstrap_key(&mut hs, op),
            Call::StoreRemoveKeyCache(op) => store::remove_key_cache(&mut hs, op),
            Call::StoreFree(op) => store::free(&mut hs, op),
            Call::Engine(op) => engine::run(&mut hs, op),
            Call::MetricsCheckTextfile(b) => agent::metrics_check_textfile(b),
            Call::MetricsText(op) => agent::metrics_text(op),
            Call::Agent(op) => agent::run(&mut hs, op, None),
            Call::AgentDevice(op, d) => agent::run(&mut hs, op, Some(d)),
            Call::Pkcs11KeyReference(op) => device::key_reference(op),
            Call::KeyReferenceUri(op) => device::reference_uri(op),
            Call::Pkcs11UriAttribute(op) => device::uri_attribute(op),
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
    for st in hs.stores {
        fstore::kubeboot_store_free(st);
    }
    fstore::kubeboot_store_free(null_mut());
    ftok::kubeboot_token_free(null_mut());
    fkey::kubeboot_key_free(null_mut());
    fkc::kubeboot_kubeconfig_free(null_mut());
    feng::kubeboot_engine_free(null_mut());
    fag::kubeboot_agent_free(null_mut());
});
