/* The grammar crate's language with this crate's scanner in place of its own. */
#include "tree_sitter/parser.h"

void *iec_bash_scanner_create(void);
void iec_bash_scanner_destroy(void *);
bool iec_bash_scanner_scan(void *, TSLexer *, const bool *);
unsigned iec_bash_scanner_serialize(void *, char *);
void iec_bash_scanner_deserialize(void *, const char *, unsigned);

static TSLanguage patched;

/* Called once (src/lib.rs holds the result in a OnceLock). */
const TSLanguage *iec_bash_patch(const TSLanguage *original) {
    patched = *original;
    patched.external_scanner.create = iec_bash_scanner_create;
    patched.external_scanner.destroy = iec_bash_scanner_destroy;
    patched.external_scanner.scan = iec_bash_scanner_scan;
    patched.external_scanner.serialize = iec_bash_scanner_serialize;
    patched.external_scanner.deserialize = iec_bash_scanner_deserialize;
    return &patched;
}
