//! Named counters (what the offload did and why), printed as JSON objects.

use std::collections::BTreeMap;

#[derive(Default, Clone, Debug)]
pub struct Counters(pub BTreeMap<String, u64>);

impl Counters {
    pub fn add(&mut self, name: &str, n: u64) {
        if n > 0 {
            *self.0.entry(name.to_string()).or_insert(0) += n;
        }
    }
    pub fn get(&self, name: &str) -> u64 {
        self.0.get(name).copied().unwrap_or(0)
    }
    pub fn merge(&mut self, other: &Counters) {
        for (k, v) in &other.0 {
            self.add(k, *v);
        }
    }
    pub fn to_json(&self) -> String {
        json_object(self.0.iter().map(|(k, v)| (k.as_str(), v.to_string())))
    }
}

/// `{"k": v, ...}` from already formatted JSON values.
pub fn json_object<'a>(items: impl IntoIterator<Item = (&'a str, String)>) -> String {
    let body: Vec<String> = items.into_iter().map(|(k, v)| format!("{}: {}", json_string(k), v)).collect();
    format!("{{{}}}", body.join(", "))
}

pub fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
