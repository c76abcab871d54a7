# iec bash witness server. It never runs the text it is given: it parses it as the body of a
# function (never called) and prints bash's own canonical form (`declare -f`), or it expands
# harness-rendered words as the arguments of a recorder under a DEBUG trap that skips every other
# command. Started by iec-witness as `bash --noprofile --norc -c SCRIPT iec-witness DIR`, with an
# empty environment and PATH, stdout and stderr on one pipe, inside a private network namespace
# when the system allows one.
#
# Requests, one line each on stdin: `P FILE` parse, `X FILE` parse with extglob on,
# `E FILE` expand words, `F` list functions. Replies: [bash diagnostics] NUL STATUS NUL BODY NUL.
cd -- "$1" || exit 97
__iec_g=0
__iec_skipped=0
__iec_rec() { __iec_args=("$@"); }
# Skip every command while the guard is up, except the few this script runs itself. With extdebug
# a DEBUG trap that fails skips its command; with functrace it also reaches command and process
# substitutions. The trap uses only keywords and assignments, so no function can shadow it.
shopt -s extdebug
set -o functrace
trap '[[ $__iec_g == 0 || ( $BASH_SUBSHELL == 0 && ( $BASH_COMMAND == "eval \"\$__iec_def\"" || $BASH_COMMAND == "__iec_rc=\$? __iec_g=0" || $BASH_COMMAND == "__iec_rec "* || ${FUNCNAME[0]} == __iec_rec ) ) ]] || { __iec_skipped=1; ((0)); }' DEBUG
# Builtins that act on the world are switched off before the loop starts.
enable -n kill ulimit umask cd pushd popd history fc hash source . suspend logout wait disown \
  bg fg jobs mapfile readarray alias unalias bind complete compgen compopt caller times exec \
  command builtin type trap enable
set -r
while IFS= read -r __iec_req; do
  __iec_mode=${__iec_req:0:1}
  __iec_file=${__iec_req:2}
  __iec_text=
  [[ -n $__iec_file ]] && IFS= read -r -d '' __iec_text < "$__iec_file"
  __iec_skipped=0
  case $__iec_mode in
  P | X)
    unset -f __iec_f
    [[ $__iec_mode == X ]] && shopt -s extglob
    __iec_def="__iec_f() {
$__iec_text
}"
    __iec_g=1
    eval "$__iec_def"
    __iec_rc=$? __iec_g=0
    shopt -u extglob
    if [[ $__iec_rc == 0 && $__iec_skipped == 0 ]]; then
      printf '\0OK\0'
      declare -f __iec_f
      printf '\0'
    else
      printf '\0ERR\0%s\0' "$__iec_skipped"
    fi
    unset -f __iec_f
    ;;
  E)
    __iec_args=()
    __iec_def="__iec_rec $__iec_text"
    __iec_g=1
    eval "$__iec_def"
    __iec_rc=$? __iec_g=0
    printf '\0%s\0%s' "$__iec_rc" "$__iec_skipped"
    printf '\1%s' "${__iec_args[@]}"
    printf '\0'
    ;;
  F)
    printf '\0OK\0'
    declare -F
    printf '\0'
    ;;
  *) printf '\0BAD\0\0' ;;
  esac
done
