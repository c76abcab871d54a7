//! tree-sitter-bash 0.25.1, the grammar Gemini CLI 0.11–0.39 parse a shell command with (npm
//! `tree-sitter-bash` under `web-tree-sitter`), linked natively with its external scanner
//! rebuilt (`vendor/scanner.c`, unchanged, under `vendor/iec_ctype.h`): the scanner's character
//! classes are those of the harness's WebAssembly runtime (its own letter table, dumped from it;
//! musl's spaces; ASCII digits), not glibc's, whose
//! `isdigit` reads outside its table for a code point above 255. With the grammar crate's own
//! scanner, `{` followed by such a character crashes the process (found by
//! `iec-harness/tests/tree_sitter_gate.rs`); `iec check` parses untrusted texts.
#![deny(missing_docs)]

use std::sync::OnceLock;

mod wasm_alpha;

extern "C" {
    fn iec_bash_patch(original: *const ()) -> *const ();
}

/// The WebAssembly runtime's `iswalpha` (called by the scanner): its own table, dumped from
/// it ([`wasm_alpha::ALPHA`]).
#[no_mangle]
extern "C" fn iec_ts_iswalpha(c: i32) -> i32 {
    i32::from(u32::try_from(c).is_ok_and(is_wasm_alpha))
}

/// Whether the runtime's `iswalpha` calls `c` a letter.
fn is_wasm_alpha(c: u32) -> bool {
    let i = wasm_alpha::ALPHA.partition_point(|&(_, hi)| hi < c);
    wasm_alpha::ALPHA.get(i).is_some_and(|&(lo, _)| lo <= c)
}

/// musl's `iswspace`: Unicode White_Space without the non-breaking spaces (U+00A0, U+2007,
/// U+202F) and U+1680, U+180E (called by the scanner; the runtime's, dumped by
/// `tools/dump-classes.mjs`, is this list).
#[no_mangle]
extern "C" fn iec_ts_iswspace(c: i32) -> i32 {
    const SPACES: &[i32] = &[
        0x20, 0x09, 0x0a, 0x0d, 0x0b, 0x0c, 0x85, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
        0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x205f, 0x3000,
    ];
    i32::from(SPACES.contains(&c))
}

/// The grammar's entry point with this crate's scanner.
unsafe extern "C" fn patched() -> *const () {
    static PATCHED: OnceLock<usize> = OnceLock::new();
    *PATCHED.get_or_init(|| {
        let original = tree_sitter_bash::LANGUAGE.into_raw();
        // SAFETY: `original` is the grammar crate's language function; `iec_bash_patch` copies
        // the language it returns into a static and swaps in the scanner compiled here.
        unsafe { iec_bash_patch(original()) as usize }
    }) as *const ()
}

/// The bash language, parsing as Gemini CLI's WebAssembly build does.
pub fn language() -> tree_sitter::Language {
    // SAFETY: `patched` returns a complete TSLanguage of the linked runtime's ABI.
    tree_sitter::Language::new(unsafe { tree_sitter_language::LanguageFn::from_raw(patched) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sexp(text: &str) -> String {
        let mut p = tree_sitter::Parser::new();
        p.set_language(&language()).unwrap();
        p.parse(text, None).unwrap().root_node().to_sexp()
    }

    #[test]
    fn brace_then_a_code_point_above_255_does_not_crash() {
        for t in ["{𝄞", "echo {é.", "a {\u{3000}", "{\u{10ffff}"] {
            let s = sexp(t);
            assert!(s.starts_with("(program"), "{t:?}: {s}");
        }
    }

    #[test]
    fn letters_are_the_webassembly_runtimes() {
        // Found by red team: non-ASCII decimal digits and the unassigned plane-2 code points
        // are letters there, letters newer than its Unicode are not.
        for c in [0x41, 0xE9, 0x663, 0xFF13, 0x1D7CE, 0x2A6E0, 0x2FFFD] {
            assert!(is_wasm_alpha(c), "{c:#X}");
        }
        for c in [0x30, 0x20, 0x2C5F, 0x870, 0x30000, 0x110000] {
            assert!(!is_wasm_alpha(c), "{c:#X}");
        }
    }

    #[test]
    fn brace_expansion_still_parses() {
        let s = sexp("echo {1..3}");
        assert!(s.contains("brace_expression"), "{s}");
    }
}
