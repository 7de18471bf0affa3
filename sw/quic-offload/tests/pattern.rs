//! The payload pattern is transfer.py's: the digests below are those tests/unit/test_transfer_pattern.py
//! checks in Python; when python (build/venv's, else python3) can import nanobpf.quic.transfer (aioquic
//! installed), transfer.py itself is asked too.

use std::process::Command;

use nanobpf_quinn::transfer::{block, payload_digest, pattern_at, parse_request};

const BLOCK_SHA256: &str = "31e8231d8ccf90100a3135581e95ad6d69c6461817a9febefa05a1598ebb2fd4";
const DIGESTS: &[(u64, &str)] = &[
    (1_000_000, "6e845e71f0f0894783da21e765dd2388908ff6fa49569dd35dad9e47f3f2659a"),
    (100, "f8bf783131e0bed64d87b6a898a1396b23d609ba8066fa552614898f04079caf"),
];

fn sha256_hex(b: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, b).as_ref().iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn pattern_matches_python() {
    assert_eq!(block().len(), 65536);
    assert_eq!(sha256_hex(block()), BLOCK_SHA256);
    for &(n, d) in DIGESTS {
        assert_eq!(payload_digest(n), d);
    }
    assert_eq!(pattern_at(65536 + 5, 3), &block()[5..8]);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let py = root.join("sw/python");
    // the project's venv (make setup) has aioquic, which transfer.py imports
    let venv = root.join("build/venv/bin/python");
    let python = if venv.exists() { venv } else { "python3".into() };
    let out = Command::new(python)
        .env("PYTHONPATH", &py)
        .args(["-c", "from nanobpf.quic.transfer import payload_digest; print(payload_digest(1000000)); print(payload_digest(70000))"])
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let s = String::from_utf8_lossy(&o.stdout);
            let lines: Vec<&str> = s.lines().collect();
            assert_eq!(lines, vec![DIGESTS[0].1.to_string(), payload_digest(70000)]);
        }
        _ => eprintln!("python cannot import nanobpf.quic.transfer (aioquic missing?): checked against the constants only"),
    }
}

#[test]
fn requests() {
    assert_eq!(parse_request(b"GET 1000"), Some(1000));
    assert_eq!(parse_request(b"GET -1"), None);
    assert_eq!(parse_request(b"PUT 1"), None);
    assert_eq!(parse_request(b"GET 1 2"), None);
    assert_eq!(parse_request(b"GET 99999999999999999999"), None);
}
