//! kubeboot next to its peers, each group in the same run: CSR build (key given, keygen
//! included), issued-certificate validation (P-256 CA, RSA-2048 CA), token parsing and kubeconfig
//! parsing (vs serde_yaml / serde_json into equivalent structs). Every
//! group also has the bare signature operation of each backend, so the encoding / checking
//! overhead is visible. Driven by `bench/run`, which writes BENCHMARKS.md.
//!
//! Run: `cargo bench -p kubeboot --features ring --bench peers`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

use kubeboot::backend::Software;
use kubeboot::backend::ring::{Ring, RingSigner};
use kubeboot::csr::CsrBuilder;
use kubeboot::key::NodeKey;
use kubeboot::verify::{Anchor, Expected, Profile};

mod shared;
use shared::{
    EC_CA, EC_LEAF, K1, NODE, NOW, der_of, kubeboot_anchored, kubeboot_der, openssl_verify, parts,
    rcgen_params, webpki_client, webpki_client_ca_per_call,
};

const RSA_CA: &[u8] = include_bytes!("../tests/data/rsa-ca.crt");
const RSA_LEAF: &[u8] = include_bytes!("../tests/data/rsa-leaf.crt");

fn openssl_csr(pkey: &openssl::pkey::PKey<openssl::pkey::Private>) -> Vec<u8> {
    use openssl::hash::MessageDigest;
    use openssl::nid::Nid;
    use openssl::x509::{X509NameBuilder, X509ReqBuilder};
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_nid(Nid::ORGANIZATIONNAME, "system:nodes").unwrap();
    name.append_entry_by_nid(Nid::COMMONNAME, "system:node:node-1").unwrap();
    let name = name.build();
    let mut b = X509ReqBuilder::new().unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_pubkey(pkey).unwrap();
    b.sign(pkey, MessageDigest::sha256()).unwrap();
    b.build().to_der().unwrap()
}

fn csr(c: &mut Criterion) {
    let key = NodeKey::from_pem(K1).unwrap();
    let ring_key = RingSigner::from_node_key(&key).unwrap();
    let ossl_key = openssl::pkey::PKey::private_key_from_pem(K1).unwrap();
    let pkcs8 = String::from_utf8(ossl_key.private_key_to_pem_pkcs8().unwrap()).unwrap();
    let rcgen_key = rcgen::KeyPair::from_pem(&pkcs8).unwrap();
    // A TBS of the real size, for the bare signatures.
    let mut tbs = [0u8; 512];
    let tbs_len =
        CsrBuilder::client(NODE).unwrap().write_tbs(&key.public_key_spki(), &mut tbs).unwrap();
    let tbs = &tbs[..tbs_len];

    let mut g = c.benchmark_group("csr_key_given");
    g.bench_function("bare_sign_p256", |b| b.iter(|| black_box(key.sign(black_box(tbs)))));
    g.bench_function("bare_sign_ring", |b| {
        use kubeboot::key::P256Signer;
        b.iter(|| black_box(ring_key.sign_p256_sha256(black_box(tbs)).unwrap()))
    });
    g.bench_function("kubeboot_p256", |b| {
        let mut buf = [0u8; 1024];
        b.iter(|| {
            black_box(
                CsrBuilder::client(black_box(NODE)).unwrap().write_der(&key, &mut buf).unwrap(),
            )
        })
    });
    g.bench_function("kubeboot_ring", |b| {
        let mut buf = [0u8; 1024];
        b.iter(|| {
            black_box(
                CsrBuilder::client(black_box(NODE))
                    .unwrap()
                    .write_der(&ring_key, &mut buf)
                    .unwrap(),
            )
        })
    });
    g.bench_function("rcgen", |b| {
        b.iter(|| black_box(rcgen_params().serialize_request(&rcgen_key).unwrap().der().len()))
    });
    g.bench_function("openssl", |b| b.iter(|| black_box(openssl_csr(&ossl_key).len())));
    g.finish();

    let mut g = c.benchmark_group("csr_keygen");
    g.bench_function("kubeboot_p256", |b| {
        let mut buf = [0u8; 1024];
        let mut seed = [7u8; 32];
        b.iter(|| {
            seed[0] = seed[0].wrapping_add(1);
            seed[1] = seed[1].wrapping_add(u8::from(seed[0] == 0));
            let key = NodeKey::from_entropy(&seed).unwrap();
            black_box(CsrBuilder::client(NODE).unwrap().write_der(&key, &mut buf).unwrap())
        })
    });
    g.bench_function("kubeboot_ring", |b| {
        let mut buf = [0u8; 1024];
        b.iter(|| {
            let key = RingSigner::generate().unwrap();
            black_box(CsrBuilder::client(NODE).unwrap().write_der(&key, &mut buf).unwrap())
        })
    });
    g.bench_function("kubeboot_p256_keygen_ring_sign", |b| {
        let mut buf = [0u8; 1024];
        let mut seed = [9u8; 32];
        b.iter(|| {
            seed[0] = seed[0].wrapping_add(1);
            seed[1] = seed[1].wrapping_add(u8::from(seed[0] == 0));
            let key = NodeKey::from_entropy(&seed).unwrap();
            let ring = RingSigner::from_node_key(&key).unwrap();
            black_box(CsrBuilder::client(NODE).unwrap().write_der(&ring, &mut buf).unwrap())
        })
    });
    g.bench_function("rcgen", |b| {
        b.iter(|| {
            let kp = rcgen::KeyPair::generate().unwrap();
            black_box(rcgen_params().serialize_request(&kp).unwrap().der().len())
        })
    });
    g.bench_function("openssl", |b| {
        let group =
            openssl::ec::EcGroup::from_curve_name(openssl::nid::Nid::X9_62_PRIME256V1).unwrap();
        b.iter(|| {
            let ec = openssl::ec::EcKey::generate(&group).unwrap();
            let pkey = openssl::pkey::PKey::from_ec_key(ec).unwrap();
            black_box(openssl_csr(&pkey).len())
        })
    });
    g.finish();
}

fn validation(c: &mut Criterion) {
    use rustls_pki_types::{CertificateDer, UnixTime};
    let key = NodeKey::from_pem(K1).unwrap();
    let spki = key.public_key_spki();
    let expected = Expected { node_name: NODE, public_key: &spki, profile: Profile::Client };

    for (group, leaf_pem, ca_pem, ec) in [
        ("validate_ec_p256_ca", EC_LEAF, EC_CA, true),
        ("validate_rsa2048_ca", RSA_LEAF, RSA_CA, false),
    ] {
        let (leaf, ca) = (der_of(leaf_pem), der_of(ca_pem));
        let (tbs, sig, ca_spki, ca_key) = parts(&leaf, &ca);
        let mut g = c.benchmark_group(group);
        if ec {
            let vk = p256::ecdsa::VerifyingKey::from_sec1_bytes(&ca_key).unwrap();
            g.bench_function("bare_verify_p256", |b| {
                use p256::ecdsa::signature::Verifier;
                b.iter(|| {
                    let s = p256::ecdsa::DerSignature::from_bytes(black_box(&sig)).unwrap();
                    vk.verify(black_box(&tbs), &s).unwrap()
                })
            });
            g.bench_function("bare_verify_ring", |b| {
                let pk = ring::signature::UnparsedPublicKey::new(
                    &ring::signature::ECDSA_P256_SHA256_ASN1,
                    &ca_key,
                );
                b.iter(|| pk.verify(black_box(&tbs), black_box(&sig)).unwrap())
            });
        } else {
            let vk = {
                use rsa::pkcs8::DecodePublicKey;
                let pk = rsa::PublicKey::from_public_key_der(&ca_spki).unwrap();
                rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(pk)
            };
            g.bench_function("bare_verify_rsa_crate", |b| {
                use rsa::signature::Verifier;
                b.iter(|| {
                    let s = rsa::pkcs1v15::Signature::try_from(black_box(sig.as_slice())).unwrap();
                    vk.verify(black_box(&tbs), &s).unwrap()
                })
            });
            g.bench_function("bare_verify_ring", |b| {
                let pk = ring::signature::UnparsedPublicKey::new(
                    &ring::signature::RSA_PKCS1_2048_8192_SHA256,
                    &ca_key,
                );
                b.iter(|| pk.verify(black_box(&tbs), black_box(&sig)).unwrap())
            });
        }
        g.bench_function("kubeboot_p256", |b| {
            b.iter(|| kubeboot_der(&Software, &leaf, &ca, &expected))
        });
        g.bench_function("kubeboot_ring", |b| {
            b.iter(|| kubeboot_der(&Ring, &leaf, &ca, &expected))
        });
        // kubeboot with the CA parsed once into an `Anchor` (what an agent keeps across
        // rotations), leaf parsed per iteration: the like-for-like row for rustls-webpki below.
        let anchor = [Anchor::from_der(&ca).unwrap()];
        g.bench_function("kubeboot_p256_anchored", |b| {
            b.iter(|| kubeboot_anchored(&Software, &leaf, &anchor, &expected))
        });
        g.bench_function("kubeboot_ring_anchored", |b| {
            b.iter(|| kubeboot_anchored(&Ring, &leaf, &anchor, &expected))
        });
        // rustls-webpki: trust anchor extracted once (like a CertPool), leaf parsed per iteration.
        let ca_der = CertificateDer::from(ca.clone());
        let anchors = [webpki::anchor_from_trusted_cert(&ca_der).unwrap().to_owned()];
        let time = UnixTime::since_unix_epoch(Duration::from_secs(NOW as u64));
        g.bench_function("rustls_webpki", |b| b.iter(|| webpki_client(&leaf, &anchors, time)));
        // The same with the trust anchor extracted on every call: like-for-like with
        // `kubeboot_ring` (CA parsed per call).
        g.bench_function("rustls_webpki_ca_per_call", |b| {
            b.iter(|| webpki_client_ca_per_call(&leaf, &ca, time))
        });
        // openssl: X509::verify (signature only, leaf already parsed) and a full store verify
        // (store with the CA built once, leaf parsed per iteration).
        let o_leaf = openssl::x509::X509::from_der(&leaf).unwrap();
        let o_ca = openssl::x509::X509::from_der(&ca).unwrap();
        let o_ca_key = o_ca.public_key().unwrap();
        g.bench_function("openssl_x509_verify", |b| b.iter(|| openssl_verify(&o_leaf, &o_ca_key)));
        let store = {
            let mut sb = openssl::x509::store::X509StoreBuilder::new().unwrap();
            sb.add_cert(o_ca.clone()).unwrap();
            let mut param = openssl::x509::verify::X509VerifyParam::new().unwrap();
            param.set_time(NOW as _);
            sb.set_param(&param).unwrap();
            sb.build()
        };
        let chain = openssl::stack::Stack::new().unwrap();
        g.bench_function("openssl_store", |b| {
            b.iter(|| {
                let l = openssl::x509::X509::from_der(black_box(&leaf)).unwrap();
                let mut ctx = openssl::x509::X509StoreContext::new().unwrap();
                assert!(ctx.init(&store, &l, &chain, |c| c.verify_cert()).unwrap());
            })
        });
        g.finish();
    }
}

fn token(c: &mut Criterion) {
    use kubeboot::token::BootstrapToken;
    let mut g = c.benchmark_group("token_parse");
    g.bench_function("kubeboot", |b| {
        b.iter(|| black_box(BootstrapToken::parse(black_box("abcdef.0123456789abcdef")).unwrap()))
    });
    g.finish();
}

/// The kubeconfig fields kubeboot reads, as serde structs (owned strings, like client-go's
/// `api.Config`; serde_yaml cannot borrow).
mod kc {
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[allow(dead_code)]
    pub struct Config {
        #[serde(default)]
        pub clusters: Vec<NamedCluster>,
        #[serde(default)]
        pub users: Vec<NamedUser>,
        #[serde(default)]
        pub contexts: Vec<NamedContext>,
        #[serde(rename = "current-context")]
        pub current_context: Option<String>,
    }

    #[derive(Deserialize)]
    #[allow(dead_code)]
    pub struct NamedCluster {
        pub name: String,
        pub cluster: Cluster,
    }

    #[derive(Deserialize)]
    #[allow(dead_code)]
    pub struct Cluster {
        pub server: Option<String>,
        #[serde(rename = "certificate-authority")]
        pub certificate_authority: Option<String>,
        #[serde(rename = "certificate-authority-data")]
        pub certificate_authority_data: Option<String>,
        #[serde(rename = "insecure-skip-tls-verify", default)]
        pub insecure_skip_tls_verify: bool,
        #[serde(rename = "tls-server-name")]
        pub tls_server_name: Option<String>,
    }

    #[derive(Deserialize)]
    #[allow(dead_code)]
    pub struct NamedUser {
        pub name: String,
        pub user: User,
    }

    #[derive(Deserialize)]
    #[allow(dead_code)]
    pub struct User {
        pub token: Option<String>,
        #[serde(rename = "tokenFile")]
        pub token_file: Option<String>,
        #[serde(rename = "client-certificate")]
        pub client_certificate: Option<String>,
        #[serde(rename = "client-certificate-data")]
        pub client_certificate_data: Option<String>,
        #[serde(rename = "client-key")]
        pub client_key: Option<String>,
        #[serde(rename = "client-key-data")]
        pub client_key_data: Option<String>,
    }

    #[derive(Deserialize)]
    #[allow(dead_code)]
    pub struct NamedContext {
        pub name: String,
        pub context: Context,
    }

    #[derive(Deserialize)]
    #[allow(dead_code)]
    pub struct Context {
        pub cluster: Option<String>,
        pub user: Option<String>,
        pub namespace: Option<String>,
    }
}

/// A kubectl-written kubeconfig with an embedded CA and a token user, in YAML and (kubectl
/// `config view --raw -o json`) JSON.
fn kubeconfig(c: &mut Criterion) {
    use kubeboot::kubeconfig::Kubeconfig;
    const YAML: &[u8] = include_bytes!("../tests/data/kubeconfig/embedded-ca.yaml");
    const JSON: &[u8] = include_bytes!("../tests/data/kubeconfig/embedded-ca.json");
    // All three read the same thing before timing starts.
    let ours = Kubeconfig::parse(YAML).unwrap();
    let yaml: kc::Config = serde_yaml::from_slice(YAML).unwrap();
    let json: kc::Config = serde_json::from_slice(JSON).unwrap();
    let ca = ours.clusters()[0].value.certificate_authority_data.unwrap();
    assert!(ca.eq_str(yaml.clusters[0].cluster.certificate_authority_data.as_deref().unwrap()));
    assert!(ca.eq_str(json.clusters[0].cluster.certificate_authority_data.as_deref().unwrap()));
    assert_eq!(ours.users().len(), yaml.users.len());

    for (group, input) in [("kubeconfig_yaml", YAML), ("kubeconfig_json", JSON)] {
        let mut g = c.benchmark_group(group);
        g.bench_function("kubeboot", |b| {
            b.iter(|| black_box(Kubeconfig::parse(black_box(input)).unwrap().clusters().len()))
        });
        if group == "kubeconfig_yaml" {
            g.bench_function("serde_yaml", |b| {
                b.iter(|| {
                    let k: kc::Config = serde_yaml::from_slice(black_box(input)).unwrap();
                    black_box(k.clusters.len())
                })
            });
        } else {
            g.bench_function("serde_json", |b| {
                b.iter(|| {
                    let k: kc::Config = serde_json::from_slice(black_box(input)).unwrap();
                    black_box(k.clusters.len())
                })
            });
        }
        g.finish();
    }
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! { name = benches; config = config(); targets = csr, validation, token, kubeconfig }
criterion_main!(benches);
