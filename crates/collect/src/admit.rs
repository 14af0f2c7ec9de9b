//! What the collector lets one client, address or key cost: rate buckets
//! (a minute's allowance, with bursts) and slots held while a body is
//! read or an export streams.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The client a limit applies to: its IPv4 address, or its IPv6 /64 (one
/// host commonly holds a whole /64, and would otherwise be any number of
/// clients).
pub fn client_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
        v4 => v4,
    }
}

/// Token bucket per client address: `rate` per minute, bursts of the same
/// size. True if one was taken.
pub fn take(buckets: &Buckets<IpAddr>, ip: IpAddr, rate: f64) -> bool {
    take_burst(buckets, ip, rate, rate)
}

/// Rate buckets by address (or by key id), each `rate` a minute: the
/// tokens left and when they were counted; when idle ones were last
/// dropped.
pub struct Buckets<K> {
    inner: Mutex<(HashMap<K, Tokens>, Instant)>,
}

/// A bucket's tokens left, and when they were counted.
type Tokens = (f64, Instant);

impl<K> Default for Buckets<K> {
    fn default() -> Buckets<K> {
        Buckets {
            inner: Mutex::new((HashMap::new(), Instant::now())),
        }
    }
}

/// What a bucket is kept by: an address by its client (IPv4 address or
/// IPv6 /64), a key id as it is.
pub trait BucketKey: std::hash::Hash + Eq {
    fn bucket(self) -> Self;
}

impl BucketKey for IpAddr {
    fn bucket(self) -> IpAddr {
        client_of(self)
    }
}

impl BucketKey for String {
    fn bucket(self) -> String {
        self
    }
}

/// `take` with bursts of at most `burst` (and never more than `rate`).
pub fn take_burst<K: BucketKey>(buckets: &Buckets<K>, key: K, rate: f64, burst: f64) -> bool {
    bucket(buckets, key, rate, burst, true)
}

/// Whether `take_burst` would take one now; takes nothing.
pub fn has_burst<K: BucketKey>(buckets: &Buckets<K>, key: K, rate: f64, burst: f64) -> bool {
    bucket(buckets, key, rate, burst, false)
}

/// How many buckets are kept before the idle ones (full again after a
/// minute) are dropped: at most once a second, so a flood of fresh
/// addresses costs no sweep per request.
const MOST_BUCKETS: usize = 100_000;

fn bucket<K: BucketKey>(buckets: &Buckets<K>, key: K, rate: f64, burst: f64, take: bool) -> bool {
    let cap = burst.min(rate).max(1.0);
    let mut guard = buckets.inner.lock().unwrap_or_else(|p| p.into_inner());
    let (b, swept) = &mut *guard;
    let now = Instant::now();
    if b.len() > MOST_BUCKETS && now.duration_since(*swept) > Duration::from_secs(1) {
        b.retain(|_, (_, t)| now.duration_since(*t) < Duration::from_secs(60));
        *swept = now;
    }
    let (tokens, at) = b.entry(key.bucket()).or_insert((cap, now));
    *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * rate / 60.0).min(cap);
    *at = now;
    if *tokens < 1.0 {
        return false;
    }
    if take {
        *tokens -= 1.0;
    }
    true
}

/// One slot of a per-address map; given back on drop.
pub struct ClientSlot {
    map: Arc<Mutex<HashMap<IpAddr, usize>>>,
    ip: IpAddr,
}

impl ClientSlot {
    /// A slot for `ip` if it holds fewer than `most`.
    pub fn take(
        map: &Arc<Mutex<HashMap<IpAddr, usize>>>,
        ip: IpAddr,
        most: usize,
    ) -> Option<ClientSlot> {
        let ip = client_of(ip);
        let mut m = map.lock().unwrap_or_else(|p| p.into_inner());
        let n = m.entry(ip).or_insert(0);
        if *n >= most.max(1) {
            return None;
        }
        *n += 1;
        Some(ClientSlot {
            map: map.clone(),
            ip,
        })
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut m = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = m.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.ip);
            }
        }
    }
}
