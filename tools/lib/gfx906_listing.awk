# Reads an llvm-objdump listing of a gfx906 code object, one kernel at a
# time; shared by tools/gpu_gate.sh and tools/gfx906_loop_mix.sh. For each
# kernel that the including program's want(name) accepts it collects the
# instructions (ad[i] address, op[i] opcode, ln[i] the line; i <= n) and the
# backward branches, i.e. the loops (addresses bt[b] .. bf[b]; b <= nb), then
# calls done(name), which the including program defines.
function hex(s,   i, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
function lst_flush() { if (lst_k != "") done(lst_k); lst_k = ""; n = 0; nb = 0 }
/^[0-9a-f]+ <[^>]+>:$/ {
  lst_flush(); s = $0; sub(/^[0-9a-f]+ </, "", s); sub(/>:$/, "", s)
  if (want(s)) { lst_k = s; lst_base = hex($1) }
  next
}
lst_k != "" && match($0, /\/\/ [0-9A-Fa-f]+:/) {
  n++; ad[n] = hex(substr($0, RSTART + 3, RLENGTH - 4)); ln[n] = $0
  s = $0; sub(/^[ \t]+/, "", s); split(s, a, /[ \t]/); op[n] = a[1]
  if (op[n] ~ /^s_(cbranch_[a-z0-9]+|branch)$/ && match($0, /\+0x[0-9a-fA-F]+>/)) {
    t = lst_base + hex(substr($0, RSTART + 3, RLENGTH - 4))
    if (t <= ad[n]) { nb++; bt[nb] = t; bf[nb] = ad[n] }
  }
}
END { lst_flush() }
