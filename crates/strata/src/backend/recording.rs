//! Recordings of repeated work: what [`super::Fields::replay`] keeps between calls (a CUDA
//! graph of a V-cycle, on the GPU), by the identity of the fields the work touches.

use std::any::Any;

/// At most this many recordings per [`Recording`]. GCR's directions each key one, and the
/// Jacobi smoother's swaps permute the fields between calls, so GCR(k) meets up to ≈ 2k(k + 1)
/// arrangements; beyond the bound a new one runs directly rather than evicting a recording
/// that is met again (evicting would capture anew at every call).
const MAX_KEYS: usize = 16;

/// Work a backend recorded, keyed by the addresses of the fields it reads and writes
/// ([`super::Fields::address`]): replaying a recording repeats the same kernels on the same
/// memory, so a call on other fields needs a recording of its own. Host backends record
/// nothing and keep this empty.
#[derive(Default)]
pub struct Recording {
    entries: Vec<(Vec<u64>, Box<dyn Any + Send + Sync>)>,
    refused: Option<String>,
    /// How many times the work of each key ran without being recorded
    /// ([`Recording::count_run`]).
    runs: Vec<(Vec<u64>, usize)>,
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recording")
            .field("entries", &self.entries.len())
            .field("refused", &self.refused)
            .finish()
    }
}

impl Recording {
    /// An empty recording.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets every recording (the work changed: new operators, another communicator), and
    /// an earlier refusal.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.refused = None;
        self.runs.clear();
    }

    /// Counts a run of the work of `key` and returns how many runs of it were counted before
    /// this one (for work recorded only once it has run a number of times,
    /// [`crate::comm::Comm::record_after`]). Counts are kept for as many keys as recordings
    /// are: a key beyond the bound always counts as new (its work runs directly).
    pub fn count_run(&mut self, key: &[u64]) -> usize {
        if let Some((_, n)) = self.runs.iter_mut().find(|(k, _)| k == key) {
            *n += 1;
            return *n - 1;
        }
        if self.runs.len() < MAX_KEYS {
            self.runs.push((key.to_vec(), 1));
        }
        0
    }

    /// The recording of type `T` kept for `key`.
    pub fn get<T: Any>(&self, key: &[u64]) -> Option<&T> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.downcast_ref())
    }

    /// The recording of type `T` kept for `key`, to change it.
    pub fn get_mut<T: Any>(&mut self, key: &[u64]) -> Option<&mut T> {
        self.entries
            .iter_mut()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.downcast_mut())
    }

    /// Whether a recording is kept for `key`.
    pub fn contains(&self, key: &[u64]) -> bool {
        self.entries.iter().any(|(k, _)| k == key)
    }

    /// Whether it keeps as many recordings as it may: a backend then records no new key
    /// (the work of one runs directly).
    pub fn is_full(&self) -> bool {
        self.entries.len() >= MAX_KEYS
    }

    /// Keeps `value` as the recording for `key` (replacing one kept for it); a new key is
    /// dropped when the recording is full. Returns whether it was kept.
    pub fn insert<T: Any + Send + Sync>(&mut self, key: &[u64], value: T) -> bool {
        if let Some(e) = self.entries.iter_mut().find(|(k, _)| k == key) {
            e.1 = Box::new(value);
            return true;
        }
        if self.is_full() {
            return false;
        }
        self.entries.push((key.to_vec(), Box::new(value)));
        true
    }

    /// Number of recordings kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Marks the work as one that cannot be recorded (it waits on the host, say), with why:
    /// later calls run it directly without trying again, until [`Recording::clear`].
    pub fn refuse(&mut self, why: String) {
        self.entries.clear();
        self.refused = Some(why);
    }

    /// Why the work could not be recorded, if it could not.
    pub fn refused(&self) -> Option<&str> {
        self.refused.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recordings_are_found_by_key_and_bounded() {
        let mut r = Recording::new();
        r.insert(&[1, 2], 10u32);
        r.insert(&[3, 4], 20u32);
        assert_eq!(r.get::<u32>(&[1, 2]), Some(&10));
        assert_eq!(r.get::<u32>(&[3, 4]), Some(&20));
        *r.get_mut::<u32>(&[3, 4]).expect("kept") += 1;
        assert_eq!(r.get::<u32>(&[3, 4]), Some(&21));
        assert_eq!(r.get_mut::<u64>(&[3, 4]), None);
        assert_eq!(r.get::<u32>(&[2, 1]), None);
        assert_eq!(
            r.get::<u64>(&[1, 2]),
            None,
            "another type is not this recording"
        );
        assert!(r.insert(&[1, 2], 11u32));
        assert_eq!((r.get::<u32>(&[1, 2]), r.len()), (Some(&11), 2));
        for k in 0..40 {
            r.insert(&[k], k);
        }
        assert!(r.is_full() && r.len() == MAX_KEYS);
        assert!(r.contains(&[0]) && r.contains(&[1, 2]));
        assert!(!r.contains(&[39]), "a full recording keeps what it has");
        assert!(!r.insert(&[99], 99u64));
        assert!(r.insert(&[0], 7u64), "a kept key is replaced");
        assert_eq!(r.get::<u64>(&[0]), Some(&7));
        assert_eq!(
            [r.count_run(&[5]), r.count_run(&[5]), r.count_run(&[6])],
            [0, 1, 0]
        );
        assert_eq!(r.count_run(&[5]), 2);
        for k in 100..140 {
            r.count_run(&[k]);
        }
        assert_eq!(
            [r.count_run(&[139]), r.count_run(&[139])],
            [0, 0],
            "a key beyond the bound counts as new"
        );
        assert_eq!(r.count_run(&[5]), 3, "counted keys are kept");
        r.refuse("waits on the host".into());
        assert!(r.is_empty());
        assert_eq!(r.refused(), Some("waits on the host"));
        r.clear();
        assert_eq!(r.refused(), None);
        assert_eq!(r.count_run(&[5]), 0, "clear forgets the counts");
    }
}
