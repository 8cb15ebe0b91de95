//! The port a managed server listens on.

use std::net::TcpListener;

use rand::RngExt;

use super::ServerError;

/// The lowest port this machine hands to outgoing connections and to
/// listeners on port 0 (`ip_local_port_range`), Linux's default when it
/// cannot be read. Managed servers listen below it.
pub fn ephemeral_floor() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768)
}

/// A port that was free a moment ago, below the ephemeral range where one
/// can be found. A server keeps its port through a restart (a crash, a
/// nemesis's restart), and while it is down any outgoing connection of the
/// machine may be given a port of that range; a port below it is taken
/// only by a program that binds it by number. Another process may still
/// take it before the server binds it; `start` notices and picks another.
pub(super) fn pick_free_port() -> Result<u16, ServerError> {
    const FLOOR: u16 = 10_000;
    let top = ephemeral_floor();
    if top > FLOOR + 1_000 {
        // Not a choice a verdict depends on (nor one a seed must replay):
        // spread so that processes starting servers at once rarely collide.
        let mut rng = rand::rng();
        for _ in 0..32 {
            let port = rng.random_range(FLOOR..top);
            if TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return Ok(port);
            }
        }
    }
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|source| ServerError::Io {
            action: "find a free port on 127.0.0.1".to_string(),
            source,
            hint: "check that the loopback interface is up",
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_picked_port_is_free_and_below_the_ephemeral_range() {
        let top = super::ephemeral_floor();
        for _ in 0..20 {
            let port = super::pick_free_port().unwrap();
            if top > 11_000 {
                assert!((10_000..top).contains(&port), "{port} not below {top}");
            }
            assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok());
        }
    }
}
