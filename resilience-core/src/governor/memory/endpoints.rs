//! Endpoint names to small ids, for per-endpoint pacing windows. The last name looked up is
//! remembered, so the check and the record of one decision hash it once.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Debug, Default)]
pub(crate) struct Endpoints {
    ids: HashMap<Box<str>, u32, BuildHasherDefault<FxHasher>>,
    last: String,
    last_id: Option<u32>,
}

impl Endpoints {
    /// The id of `name`, if it has one.
    #[inline]
    pub fn find(&mut self, name: &str) -> Option<u32> {
        if self.last_id.is_some() && self.last == name {
            return self.last_id;
        }
        let id = self.ids.get(name).copied();
        if id.is_some() {
            self.last.clear();
            self.last.push_str(name);
            self.last_id = id;
        }
        id
    }

    /// The id of `name`, assigning the next one if it is new.
    #[inline]
    pub fn get_or_insert(&mut self, name: &str) -> u32 {
        if let Some(id) = self.find(name) {
            return id;
        }
        let id = self.ids.len() as u32;
        self.ids.insert(name.into(), id);
        self.last.clear();
        self.last.push_str(name);
        self.last_id = Some(id);
        id
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Keeps only the endpoints `keep` says yes to, renumbering them densely; returns the
    /// old id of each new id, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(u32) -> bool) -> Vec<u32> {
        let mut kept: Vec<(Box<str>, u32)> = self.ids.drain().filter(|&(_, id)| keep(id)).collect();
        kept.sort_by_key(|&(_, id)| id);
        let old: Vec<u32> = kept.iter().map(|&(_, id)| id).collect();
        self.ids = kept
            .into_iter()
            .enumerate()
            .map(|(new, (name, _))| (name, new as u32))
            .collect();
        self.last_id = None;
        old
    }
}

/// A multiply-rotate hash over 8-byte words (as in rustc's FxHash): endpoint names are
/// short route templates chosen by the application, not attacker-controlled keys.
#[derive(Default)]
pub(crate) struct FxHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_the_cache_never_confuses_names() {
        let mut e = Endpoints::default();
        let a = e.get_or_insert("/repos/{o}/{r}/pulls");
        let b = e.get_or_insert("/repos/{o}/{r}/issues");
        assert_ne!(a, b);
        assert_eq!(e.find("/repos/{o}/{r}/pulls"), Some(a));
        assert_eq!(e.find("/repos/{o}/{r}/pullz"), None);
        assert_eq!(e.find("/repos/{o}/{r}/issues"), Some(b));
        let old = e.retain(|id| id == b);
        assert_eq!(old, [b]);
        assert_eq!(e.find("/repos/{o}/{r}/issues"), Some(0));
        assert_eq!(e.find("/repos/{o}/{r}/pulls"), None);
    }
}
