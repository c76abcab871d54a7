//! tree-sitter-bash 0.25.1, the grammar Gemini CLI 0.11–0.39 parse a shell command with (npm
//! `tree-sitter-bash` under `web-tree-sitter`), linked natively with its external scanner
//! rebuilt (`vendor/scanner.c`, unchanged, under `vendor/iec_ctype.h`): the scanner's character
//! classes are those of the harness's WebAssembly build (musl's, no locale), not glibc's, whose
//! `isdigit` reads outside its table for a code point above 255. With the grammar crate's own
//! scanner, `{` followed by such a character crashes the process (found by
//! `iec-harness/tests/tree_sitter_gate.rs`); `iec check` parses untrusted texts.
#![deny(missing_docs)]

use std::sync::OnceLock;

extern "C" {
    fn iec_bash_patch(original: *const ()) -> *const ();
}

/// musl's `iswalpha`: Unicode's Alphabetic property (called by the scanner).
#[no_mangle]
extern "C" fn iec_ts_iswalpha(c: i32) -> i32 {
    let alpha = u32::try_from(c)
        .ok()
        .and_then(char::from_u32)
        .is_some_and(char::is_alphabetic);
    i32::from(alpha)
}

/// musl's `iswspace`: Unicode White_Space without the non-breaking spaces (U+00A0, U+2007,
/// U+202F) and U+1680, U+180E (called by the scanner).
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
    fn brace_expansion_still_parses() {
        let s = sexp("echo {1..3}");
        assert!(s.contains("brace_expression"), "{s}");
    }
}
