/* Forced in before vendor/scanner.c (see build.rs). The character classes of the WebAssembly
 * build that Gemini CLI runs (web-tree-sitter's runtime, musl-derived: no locale), for any
 * code point: glibc's `isdigit` is undefined above 255 and its `isw*` follow the locale, which
 * for a program that never calls setlocale knows only ASCII. */
#ifndef IEC_CTYPE_H
#define IEC_CTYPE_H
#include <ctype.h>
#include <stdint.h>
#include <wctype.h>

/* Implemented in Rust (src/lib.rs): Unicode's Alphabetic property and musl's space list. */
int iec_ts_iswalpha(int32_t c);
int iec_ts_iswspace(int32_t c);

static inline int iec_ts_isdigit(int32_t c) { return (uint32_t)c - '0' < 10; }
static inline int iec_ts_iswalnum(int32_t c) { return iec_ts_isdigit(c) || iec_ts_iswalpha(c); }

#undef isdigit
#undef iswdigit
#undef iswalpha
#undef iswalnum
#undef iswspace
#define isdigit(c) iec_ts_isdigit(c)
#define iswdigit(c) iec_ts_isdigit(c)
#define iswalpha(c) iec_ts_iswalpha(c)
#define iswalnum(c) iec_ts_iswalnum(c)
#define iswspace(c) iec_ts_iswspace(c)

#define tree_sitter_bash_external_scanner_create iec_bash_scanner_create
#define tree_sitter_bash_external_scanner_destroy iec_bash_scanner_destroy
#define tree_sitter_bash_external_scanner_scan iec_bash_scanner_scan
#define tree_sitter_bash_external_scanner_serialize iec_bash_scanner_serialize
#define tree_sitter_bash_external_scanner_deserialize iec_bash_scanner_deserialize
#endif
