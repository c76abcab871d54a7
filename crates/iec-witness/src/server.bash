# iec bash witness server. It never runs the text it is given: it parses it as the body of a
# function (never called) and prints bash's own canonical form (`declare -f`), or it expands
# harness-rendered words as the arguments of a recorder under a DEBUG trap that skips every other
# command. Started by iec-witness as `bash --noprofile --norc -c SCRIPT iec-witness DIR`, with an
# empty environment and PATH, stdout and stderr on one pipe, inside a private network namespace
# when the system allows one.
#
# Requests, one line each on stdin, naming what to do with the request file `req-NONCE` that the
# caller wrote: `P` it holds `__iec_f() {⏎TEXT⏎}`: parse and print; `X` the same with extglob on;
# `V`/`W` the same without printing; `E` it holds `__iec_rec WORDS`: expand the words; `D` the
# same with dash's word rules; `F` list functions. Replies: BODY-OR-DIAGNOSTICS NUL STATUS NUL, where
# STATUS is OK (the body is `declare -f` output), ERR:SKIPPED (bash's diagnostics precede it), or
# for E: RC:SKIPPED then SOH-separated words, NUL, `declare -F` output, NUL. Each reply ends in
# as few writes as bash allows: every write wakes the reader.
cd -- "$1" || exit 97
# `nofork`: the kernel filter forbids this process to start any other (see jail.rs), so parse
# requests need no guard; `guarded`: every request runs under the DEBUG trap.
__iec_nofork=0
[[ $2 == nofork ]] && __iec_nofork=1
__iec_g_NONCE=0
__iec_skipped=0
__iec_rec() { __iec_args=("$@"); }
# While the guard is up, skip every command except the few this script runs itself. With
# extdebug a DEBUG trap that fails skips its command; with functrace it also reaches command and
# process substitutions. The trap uses only keywords and assignments, so no function can shadow
# it, and the commands it lets through name a per-server nonce nobody else knows. It is set only
# around the untrusted eval: a DEBUG trap costs more than the rest of a request.
shopt -s extdebug
set -o functrace
__iec_trap='[[ $__iec_g_NONCE == 0 || ( $BASH_SUBSHELL == 0 && ( $BASH_COMMAND == "source req-NONCE" || $BASH_COMMAND == "__iec_rc=\$? __iec_g_NONCE=0" || $BASH_COMMAND == __iec_rec || $BASH_COMMAND == "__iec_rec "* || ${FUNCNAME[0]} == __iec_rec ) ) ]] || { __iec_skipped=1; ((0)); }'
# Builtins that act on the world are switched off before the loop starts (trap stays: the loop
# sets and clears the guard with it; source stays: it reads the request file, which bash parses
# faster than a string handed to eval).
shopt -u sourcepath
enable -n kill ulimit umask cd pushd popd history fc hash . suspend logout wait disown \
  bg fg jobs mapfile readarray alias unalias bind complete compgen compopt caller times exec \
  command builtin type enable
set -r
while IFS= read -r __iec_req; do
  __iec_skipped=0
  case ${__iec_req:0:1} in
  P | X | V | W | Q | R)
    # P parse and print bash's canonical form; V only say whether it parses; X and W: the same
    # with extglob on while parsing; Q (R with extglob) a pair of functions, printed together.
    [[ ${__iec_req:0:1} == [XWR] ]] && shopt -s extglob
    # A pair's forms must come from this request only.
    [[ ${__iec_req:0:1} == [QR] ]] && unset -f __iec_f __iec_g
    if ((__iec_nofork)); then
      source req-NONCE
      __iec_rc=$?
    else
      __iec_g_NONCE=1
      trap "$__iec_trap" DEBUG
      source req-NONCE
      __iec_rc=$? __iec_g_NONCE=0
      trap - DEBUG
    fi
    [[ ${__iec_req:0:1} == [XWR] ]] && shopt -u extglob
    if [[ $__iec_rc == 0 && $__iec_skipped == 0 ]]; then
      [[ ${__iec_req:0:1} == [PX] ]] && declare -f __iec_f
      # One builtin, one write: the reader wakes once (the texts never name these functions).
      [[ ${__iec_req:0:1} == [QR] ]] && declare -f __iec_f __iec_g
      printf '\0OK\0'
    else
      printf '\0ERR:%s\0' "$__iec_skipped"
    fi
    ;;
  E | D)
    if ((__iec_nofork)); then printf '\0BAD\0'; continue; fi
    # E expands words as bash does; D as close to dash as bash gets (no brace expansion).
    # dash also matches `.` and `..` (`.?` is `..`); bash 5.2 skips them unless told.
    [[ ${__iec_req:0:1} == D ]] && set +B && shopt -u globskipdots
    __iec_args=()
    __iec_g_NONCE=1
    trap "$__iec_trap" DEBUG
    source req-NONCE
    __iec_rc=$? __iec_g_NONCE=0
    trap - DEBUG
    set -B
    shopt -s globskipdots
    printf '\0%s:%s:%s\0' "$__iec_rc" "$__iec_skipped" "${#__iec_args[@]}"
    # A field per word: a word cannot hold NUL, and it may hold any other byte (a separator such
    # as SOH split words that carried it). printf repeats its format once even without
    # arguments: no words, no field.
    ((${#__iec_args[@]})) && printf '%s\0' "${__iec_args[@]}"
    declare -F
    printf '\0'
    ;;
  F)
    declare -F
    printf '\0OK\0'
    ;;
  *) printf '\0BAD\0' ;;
  esac
done
