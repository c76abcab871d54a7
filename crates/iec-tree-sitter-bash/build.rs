// Compiles tree-sitter-bash 0.25.1's external scanner (vendor/scanner.c, unchanged, MIT) with
// vendor/iec_ctype.h forced in first: its character classes become the ones of the harness's
// WebAssembly build (musl's, locale-free) instead of glibc's locale tables, which `isdigit`
// indexes out of bounds for a code point above 255 (a crash on `{` followed by such a character).
// The scanner's entry points are renamed so they do not collide with the grammar crate's own.
fn main() {
    let dir = std::path::Path::new("vendor");
    for f in ["scanner.c", "iec_ctype.h", "iec_language.c"] {
        println!("cargo:rerun-if-changed={}", dir.join(f).display());
    }
    cc::Build::new()
        .std("c11")
        .include(dir)
        .flag_if_supported("-Wno-unused-value")
        .flag_if_supported("-Wno-unused-parameter")
        .flag("-include")
        .flag(dir.join("iec_ctype.h").to_str().unwrap())
        .file(dir.join("scanner.c"))
        .file(dir.join("iec_language.c"))
        .compile("iec-tree-sitter-bash");
}
