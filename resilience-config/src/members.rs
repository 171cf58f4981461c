//! A JSON object read member by member: every member kept in order, repeated keys included
//! (serde_json's `Value` keeps only the last, silently), and each value left as raw text, so
//! one value serde_json cannot hold (`1e400`) fails that member alone, not the whole string.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;

/// An object's members, in order.
pub(crate) struct Members(pub(crate) Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MembersVisitor)
    }
}

struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Members;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
        let mut members = Vec::new();
        while let Some(member) = map.next_entry::<String, Box<RawValue>>()? {
            members.push(member);
        }
        Ok(Members(members))
    }
}

impl Members {
    /// `raw` as an object's members; an error if it is not valid JSON or not an object.
    pub(crate) fn parse(raw: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(raw)
    }

    /// How many times `key` appears.
    pub(crate) fn count(&self, key: &str) -> usize {
        self.0.iter().filter(|(k, _)| k == key).count()
    }

    /// Whether the member at `index` is the first with its key.
    pub(crate) fn is_first(&self, index: usize) -> bool {
        let key = &self.0[index].0;
        !self.0[..index].iter().any(|(k, _)| k == key)
    }
}
