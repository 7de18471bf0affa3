// The protocol's and the ABI's constants come from hw/defs/*.toml through their Rust views
// (nanobpf-genctrl/nanobpf-genabi --all build/generated, `make defs`); libnanobpf.a (the driver's
// netlink client, `make host-tools`) is linked for the driver backend.
use std::env;
use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../..");
    let gen = env::var("NANOBPF_GEN").map(PathBuf::from).unwrap_or_else(|_| root.join("build/generated"));
    let host = env::var("NANOBPF_HOST").map(PathBuf::from).unwrap_or_else(|_| root.join("build/host"));
    for f in ["rust/nanobpf_ctrl.rs", "rust/nanobpf_ebpf_defs.rs"] {
        let p = gen.join(f);
        if !p.exists() {
            panic!("{} is missing: run `make defs` (or set NANOBPF_GEN)", p.display());
        }
        println!("cargo:rerun-if-changed={}", p.display());
    }
    let lib = host.join("libnanobpf.a");
    if !lib.exists() {
        panic!("{} is missing: run `make host-tools` (or set NANOBPF_HOST)", lib.display());
    }
    println!("cargo:rerun-if-changed={}", lib.display());
    println!("cargo:rustc-env=NANOBPF_GEN_DIR={}", gen.display());
    println!("cargo:rustc-link-search=native={}", host.display());
    println!("cargo:rustc-link-lib=static=nanobpf");
    println!("cargo:rustc-link-lib=nl-genl-3");
    println!("cargo:rustc-link-lib=nl-3");
    println!("cargo:rerun-if-env-changed=NANOBPF_GEN");
    println!("cargo:rerun-if-env-changed=NANOBPF_HOST");
}
