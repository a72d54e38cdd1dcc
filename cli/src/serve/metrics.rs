//! Prometheus text metrics: requests by route and status, a latency histogram, queue depth,
//! compute in flight and resident key bytes.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// Upper bounds of the latency histogram, seconds.
const BUCKETS: [f64; 12] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// The counters.
#[derive(Default)]
pub(crate) struct Metrics {
    by_status: Mutex<BTreeMap<(String, u16), u64>>,
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
    /// Requests waiting for a compute slot.
    pub queued: AtomicU64,
    /// Requests computing.
    pub running: AtomicU64,
}

impl Metrics {
    /// Records one finished request.
    pub(crate) fn record(&self, route: &str, status: u16, seconds: f64) {
        *self
            .by_status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry((route.to_owned(), status))
            .or_insert(0) += 1;
        for (b, &le) in self.buckets.iter().zip(BUCKETS.iter()) {
            if seconds <= le {
                b.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add((seconds * 1e6) as u64, Ordering::Relaxed);
    }

    /// The text exposition.
    pub(crate) fn render(&self, resident_bytes: u64, resident_sets: usize) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# HELP wgfhe_requests_total Requests answered, by route and status.");
        let _ = writeln!(s, "# TYPE wgfhe_requests_total counter");
        for ((route, status), n) in self.by_status.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            let _ = writeln!(s, "wgfhe_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}");
        }
        let _ = writeln!(s, "# HELP wgfhe_request_seconds Request latency.");
        let _ = writeln!(s, "# TYPE wgfhe_request_seconds histogram");
        for (b, le) in self.buckets.iter().zip(BUCKETS.iter()) {
            let _ = writeln!(s, "wgfhe_request_seconds_bucket{{le=\"{le}\"}} {}", b.load(Ordering::Relaxed));
        }
        let count = self.count.load(Ordering::Relaxed);
        let _ = writeln!(s, "wgfhe_request_seconds_bucket{{le=\"+Inf\"}} {count}");
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(s, "wgfhe_request_seconds_sum {sum}");
        let _ = writeln!(s, "wgfhe_request_seconds_count {count}");
        let gauges = [
            ("wgfhe_queue_depth", "Requests waiting for a compute slot.", self.queued.load(Ordering::Relaxed)),
            ("wgfhe_compute_in_flight", "Requests computing.", self.running.load(Ordering::Relaxed)),
            ("wgfhe_resident_key_bytes", "Parsed evaluation-key bytes held on the backend.", resident_bytes),
            ("wgfhe_resident_key_sets", "Key sets held parsed on the backend.", resident_sets as u64),
            ("wgfhe_process_resident_bytes", "The process's resident set size.", rss_bytes()),
        ];
        for (name, help, v) in gauges {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        s
    }
}

/// The process's resident set size (Linux `/proc/self/statm`; 0 elsewhere).
pub(crate) fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()))
        .map_or(0, |pages| pages * 4096)
}
