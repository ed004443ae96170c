//! The [`kube::Client`] of the node's identity: a tower service under kube-rs that sends each
//! request with the client identity current when it is sent. Its connections are pooled per
//! identity ([`Pool`]); a new identity replaces the pool, so no request after a rotation goes
//! over a connection made with the old certificate.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper_rustls::{FixedServerNameResolver, HttpsConnector};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::Body;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;

use crate::credentials::{Credentials, Identity, Shared};
use crate::tls::{self, Fixed, Trust};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The connections made with one identity.
pub(crate) struct Pool {
    generation: u64,
    client: Client<HttpsConnector<HttpConnector>, Body>,
}

impl Pool {
    fn new(identity: &Identity) -> Result<Pool, String> {
        let trust = Trust { ca_pem: identity.ca_pem.as_deref(), insecure: identity.insecure };
        let config = tls::client_config(&trust, Some(Arc::new(Fixed(identity.certified.clone()))))?;
        let connector = connector(config, identity.server_name.as_deref())?;
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(Pool { generation: identity.generation, client })
    }
}

/// The service under the [`kube::Client`]: the current identity's pool, the request's URI on
/// the identity's server.
#[derive(Clone)]
pub(crate) struct Switch {
    pub(crate) shared: Arc<Shared>,
}

impl Switch {
    fn prepare(
        &self,
        req: &mut http::Request<Body>,
    ) -> Result<Client<HttpsConnector<HttpConnector>, Body>, BoxError> {
        let identity = Credentials { shared: self.shared.clone() }.client()?;
        *req.uri_mut() = on_server(&identity.server, req.uri())?;
        let mut pool = self.shared.pool.lock().map_err(|_| "the connection pool is poisoned")?;
        if pool.as_ref().is_none_or(|p| p.generation != identity.generation) {
            *pool = Some(Pool::new(&identity)?);
        }
        Ok(pool.as_ref().map(|p| p.client.clone()).ok_or("no connection pool")?)
    }
}

/// `uri`'s path and query on `server` (whose own path, if any, goes first, as kube-rs' base URI).
fn on_server(server: &str, uri: &http::Uri) -> Result<http::Uri, BoxError> {
    let base: http::Uri = server.parse()?;
    let prefix = base.path().trim_end_matches('/').to_owned();
    let pq = uri.path_and_query().map_or("/", |pq| pq.as_str());
    let mut parts = base.into_parts();
    parts.path_and_query = Some(format!("{prefix}{pq}").parse()?);
    Ok(http::Uri::from_parts(parts)?)
}

impl tower_service::Service<http::Request<Body>> for Switch {
    type Response = http::Response<hyper::body::Incoming>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: http::Request<Body>) -> Self::Future {
        let client = self.prepare(&mut req);
        Box::pin(async move { Ok(client?.request(req).await?) })
    }
}

#[cfg(test)]
mod tests;

/// An HTTPS connector (HTTP/1.1) over a client configuration; `server_name` replaces the URL's
/// host in the server certificate's check (`tls-server-name`). Connecting gives up after 10 s.
fn connector(
    config: ClientConfig,
    server_name: Option<&str>,
) -> Result<HttpsConnector<HttpConnector>, String> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(std::time::Duration::from_secs(10)));
    let builder = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config).https_only();
    let builder = match server_name {
        Some(name) => {
            let name = name.trim_start_matches('[').trim_end_matches(']').to_owned();
            let name = ServerName::try_from(name)
                .map_err(|_| "tls-server-name is not a DNS name or an IP address")?;
            builder.with_server_name_resolver(FixedServerNameResolver::new(name))
        }
        None => builder,
    };
    Ok(builder.enable_http1().wrap_connector(http))
}
