//! The port a managed server listens on.

use std::net::TcpListener;

use super::ServerError;

/// The lowest port this machine hands to outgoing connections
/// (`ip_local_port_range`), Linux's default when it cannot be read.
fn ephemeral_floor() -> u16 {
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
        // Not a choice a verdict depends on: spread over the range so that
        // processes starting servers at once rarely try the same port.
        static PICKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut x = nanos
            ^ (u64::from(std::process::id()) << 32)
            ^ PICKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        for _ in 0..32 {
            // splitmix64: a cheap, well-spread step.
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let port = FLOOR + (z % u64::from(top - FLOOR)) as u16;
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
