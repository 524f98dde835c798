//! Name resolution, done once per host per run rather than per request.

use barrage_metrics::ErrorKind;
use std::net::SocketAddr;

/// Resolves `host:port` to its addresses. An empty answer counts as a DNS failure.
pub async fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, ErrorKind> {
    match tokio::net::lookup_host((host, port)).await {
        Ok(addrs) => {
            let addrs: Vec<SocketAddr> = addrs.collect();
            if addrs.is_empty() {
                Err(ErrorKind::Dns)
            } else {
                Ok(addrs)
            }
        }
        Err(_) => Err(ErrorKind::Dns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn resolves_literals_and_fails_unknown_hosts() {
        let addrs = resolve("127.0.0.1", 80).await.unwrap();
        assert_eq!(addrs, vec!["127.0.0.1:80".parse().unwrap()]);
        assert_eq!(
            resolve("no-such-host.invalid", 80).await,
            Err(ErrorKind::Dns)
        );
    }
}
