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
# same with dash's word rules; `F` list functions; `M<N>` N texts at once (`__iec_m0() {⏎TEXT⏎}⏎…`). Replies: BODY-OR-DIAGNOSTICS NUL STATUS NUL, where
# STATUS is OK (the body is `declare -f` output), ERR:SKIPPED (bash's diagnostics precede it), or
# for E: RC:SKIPPED then SOH-separated words, NUL, `declare -F` output, NUL. Each reply ends in
# as few writes as bash allows: every write wakes the reader.
cd -- "$1" || exit 97
# `nofork`: the kernel filter forbids this process to start any other (see jail.rs), so parse
# requests need no guard; `guarded`: every request runs under the DEBUG trap.
# (Lines between `#<guarded>` and `#</guarded>` are removed from a nofork server's copy of
# this script, those between `#<nofork>` and `#</nofork>` from a guarded one's: a test of the
# kind in every request would cost a few microseconds.)
__iec_rec() { __iec_args=("$@"); }
# While the trap is set, it lets through only: the server's own commands (they are not in the
# request file, so BASH_SOURCE is empty for them), the recorder's body, and one command of the
# request file: the one whose printing bash gave for the request's text alone (`=`; mode `*`:
# the first `__iec_rec` command, for words without a canonical form). Everything else is
# skipped (extdebug: a failing DEBUG trap skips its command; functrace: it reaches command and
# process substitutions) and taints the request. BASH_SOURCE, BASH_SUBSHELL and FUNCNAME ignore
# assignments. The trap string tests the common case (a server command) itself and leaves the
# rest to `__iec_guard`, a read-only function (bash parses a trap string every time it runs it:
# a short one costs a third of the whole test written out); inside it every array has one more
# element, its own. No text can redefine or unset it, and one that calls it is skipped by it. A
# text can set the mode variables only to numbers (arithmetic), which never match; after the one
# command the mode is `ran`, and the only commands left are the server's own.
shopt -s extdebug
set -o functrace
__iec_guard() {
  # Called from the trap at the request file's top level, FUNCNAME is (__iec_guard source); in
  # the recorder's body (__iec_guard __iec_rec source).
  if [[ $BASH_SUBSHELL == 0 && ${FUNCNAME[1]} == __iec_rec && ${FUNCNAME[2]} == source && ${#FUNCNAME[@]} == 3 ]]; then return 0
  elif [[ $BASH_SUBSHELL == 0 && ${FUNCNAME[1]} == source && ${#FUNCNAME[@]} == 2 && ( ( $__iec_mode == = && $BASH_COMMAND == "$__iec_expect" ) || ( $__iec_mode == "*" && $BASH_COMMAND == "__iec_rec "* ) ) ]]; then __iec_mode=ran; return 0
  fi
  __iec_tainted=1
  return 1
}
__iec_trap='[[ ${#BASH_SOURCE[@]} == 0 && $BASH_SUBSHELL == 0 ]] || __iec_guard'
__iec_mode=none
__iec_expect=$'\n'
readonly -f __iec_rec __iec_guard
readonly __iec_trap
# Variables that change how bash parses or expands, or how this loop reads, are fixed: a word
# such as $((TMOUT=1)) or $((POSIXLY_CORRECT=1)) would otherwise change every later answer.
readonly POSIXLY_CORRECT BASH_COMPAT FUNCNEST TMOUT HOME PWD OLDPWD CDPATH GLOBIGNORE EXECIGNORE \
  BASH_XTRACEFD PS4 LANG LC_ALL LC_CTYPE LC_COLLATE LC_MESSAGES LC_NUMERIC LC_TIME BASH_ENV ENV \
  GLOBSORT BASH_LOADABLES_PATH HISTFILE TIMEFORMAT
# Builtins that act on the world are switched off before the loop starts (trap stays: it is
# the guard; source stays: it reads the request file, which bash parses faster than a string
# handed to eval).
shopt -u sourcepath
enable -n kill ulimit umask cd pushd popd history fc hash . suspend logout wait disown \
  bg fg jobs mapfile readarray alias unalias bind complete compgen compopt caller times exec \
  command builtin type enable
set -r
# The trap is set around every untrusted request and stays on after it unless the request is
# known clean: the one command printed for the words alone ran (`=` mode; kept in $1, which no
# expansion can assign) and nothing else did, so no function can have been defined. After any
# other request a function that the request defined in place of a builtin this loop calls
# (`printf`, `declare`, `trap`) has its body in the request file, the trap skips every command
# of it, the reply lacks the server's own functions, and the caller retires the server.
# The state every answer is given in, checked after every request (IFS cannot be made
# read-only: the loop's `read` assigns it for itself).
__iec_state="$BASHOPTS|$SHELLOPTS|$-|$IFS"
readonly __iec_state
# Only the trap sets it (to 1), and nothing sets it back but the expansion requests.
__iec_tainted=0
while IFS= read -r __iec_req; do
  case ${__iec_req:0:1} in
  # P (parse and print bash's canonical form) and V (only say whether it parses), the requests
  # of every check, have arms of their own: each command of an arm costs a few microseconds.
  P)
    #<guarded>
    __iec_mode=none
    trap "$__iec_trap" DEBUG
    #</guarded>
    source req-NONCE
    __iec_rc=$?
    #<guarded>
    [[ $__iec_tainted == 0 ]] && trap - DEBUG
    #</guarded>
    if [[ $__iec_rc == 0 && $__iec_tainted == 0 && "$BASHOPTS|$SHELLOPTS|$-|$IFS" == "$__iec_state" ]]; then
      declare -f __iec_f
      printf '\0OK\0'
    else
      [[ "$BASHOPTS|$SHELLOPTS|$-|$IFS" == "$__iec_state" ]] || __iec_tainted=1
      printf '\0ERR:%s\0' "$__iec_tainted"
    fi
    ;;
  V)
    #<guarded>
    __iec_mode=none
    trap "$__iec_trap" DEBUG
    #</guarded>
    source req-NONCE
    __iec_rc=$?
    #<guarded>
    [[ $__iec_tainted == 0 ]] && trap - DEBUG
    #</guarded>
    if [[ $__iec_rc == 0 && $__iec_tainted == 0 && "$BASHOPTS|$SHELLOPTS|$-|$IFS" == "$__iec_state" ]]; then
      printf '\0OK\0'
    else
      [[ "$BASHOPTS|$SHELLOPTS|$-|$IFS" == "$__iec_state" ]] || __iec_tainted=1
      printf '\0ERR:%s\0' "$__iec_tainted"
    fi
    ;;
  X | W | Q | R)
    # X and W: P and V with extglob on while parsing; Q (R with extglob) a pair of functions,
    # printed together.
    [[ ${__iec_req:0:1} == [XWR] ]] && shopt -s extglob
    # A pair's forms must come from this request only.
    [[ ${__iec_req:0:1} == [QR] ]] && unset -f __iec_f __iec_g
    #<guarded>
    __iec_mode=none
    trap "$__iec_trap" DEBUG
    #</guarded>
    source req-NONCE
    __iec_rc=$?
    #<guarded>
    # A parse request never runs a command: the trap comes off only if none was tried.
    [[ $__iec_tainted == 0 ]] && trap - DEBUG
    #</guarded>
    [[ ${__iec_req:0:1} == [XWR] ]] && shopt -u extglob
    # Answered only in the state every answer is given in (checked in the same test: each
    # command costs a few microseconds).
    if [[ $__iec_rc == 0 && $__iec_tainted == 0 && "$BASHOPTS|$SHELLOPTS|$-|$IFS" == "$__iec_state" ]]; then
      [[ ${__iec_req:0:1} == X ]] && declare -f __iec_f
      # One builtin, one write: the reader wakes once (the texts never name these functions).
      [[ ${__iec_req:0:1} == [QR] ]] && declare -f __iec_f __iec_g
      printf '\0OK\0'
    else
      [[ "$BASHOPTS|$SHELLOPTS|$-|$IFS" == "$__iec_state" ]] || __iec_tainted=1
      printf '\0ERR:%s\0' "$__iec_tainted"
    fi
    ;;
  M)
    # M<N>: N texts as the functions __iec_m0 … __iec_m<N-1>, printed together in one write
    # (the pool's batch of parses; the texts never name these functions).
    __iec_names=()
    for ((__iec_i = 0; __iec_i < ${__iec_req:1}; __iec_i++)); do __iec_names+=("__iec_m$__iec_i"); done
    unset -f "${__iec_names[@]}"
    #<guarded>
    __iec_mode=none
    trap "$__iec_trap" DEBUG
    #</guarded>
    source req-NONCE
    __iec_rc=$?
    #<guarded>
    [[ $__iec_tainted == 0 ]] && trap - DEBUG
    #</guarded>
    if [[ $__iec_rc == 0 && $__iec_tainted == 0 && "$BASHOPTS|$SHELLOPTS|$-|$IFS" == "$__iec_state" ]]; then
      declare -f "${__iec_names[@]}"
      printf '\0OK\0'
    else
      [[ "$BASHOPTS|$SHELLOPTS|$-|$IFS" == "$__iec_state" ]] || __iec_tainted=1
      printf '\0ERR:%s\0' "$__iec_tainted"
    fi
    ;;
  E | D)
    #<nofork>
    printf '\0BAD\0'
    continue
    #</nofork>
    # The command bash printed for these words alone (`=` then the text), or `*`.
    IFS= read -r -d '' __iec_expect < exp-NONCE
    __iec_mode=${__iec_expect:0:1} __iec_expect=${__iec_expect:1} __iec_tainted=0 __iec_args=()
    # E expands words as bash does; D as close to dash as bash gets (no brace expansion).
    # dash also matches `.` and `..` (`.?` is `..`); bash 5.2 skips them unless told.
    [[ ${__iec_req:0:1} == D ]] && set +B && shopt -u globskipdots
    set -- "$__iec_mode"
    trap "$__iec_trap" DEBUG
    source req-NONCE
    __iec_rc=$?
    [[ $1 == = && $__iec_mode == ran && $__iec_tainted == 0 ]] && trap - DEBUG
    [[ ${__iec_req:0:1} == D ]] && set -B && shopt -s globskipdots
    # The one command ran, nothing else did, and the state is as it was.
    [[ $__iec_mode == ran && "$BASHOPTS|$SHELLOPTS|$-|$IFS" == "$__iec_state" ]] || __iec_tainted=1
    __iec_mode=none __iec_expect=$'\n'
    printf '\0%s:%s:%s\0' "$__iec_rc" "$__iec_tainted" "${#__iec_args[@]}"
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
