#!/usr/bin/env bash
# Runs the kit's benchmarks and prints the four figures that docs/performance.md records:
# default suite wall time, callback overhead against a plain Python loop, exploration throughput with 1 and
# 2 jobs, peak memory while exploring 1,000 and 10,000 scenarios (ASTRABOX_BENCH_MEMORY=1, minutes), and the
# cost of masking long histories and hunting large materials (internal/bench/secrets_bench_test.go).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench . -benchtime "${BENCHTIME:-3x}" -timeout 60m ./internal/bench | tee "$out"
echo
echo "== astrabox performance ($(nproc) cores, $(python3 --version 2>&1), $(go version | cut -d' ' -f3)) =="
awk '
/^BenchmarkDefaultSuite/      { for (i=1;i<=NF;i++) { if ($i=="ms/suite") m=$(i-1); if ($i=="interpreter-starts/suite") r=$(i-1) }
                                printf "default suite, reference provider:   %s ms wall (%s bare interpreter starts of the same run)\n", m, r }
/^BenchmarkForkedReplicaCost/ { for (i=1;i<=NF;i++) { if ($i=="ms-cpu/children") c=$(i-1); if ($i=="ms-cpu/kit") k=$(i-1); if ($i=="ms-cpu/server") s=$(i-1); if ($i=="faults/children") f=$(i-1) }
                                printf "forked replica, CPU per start+load+close: %s ms supervisor and harness, %s ms kit, %s ms fork server; %s page faults\n", c, k, s, f }
/^BenchmarkReplicaBreakdown\/provider/ { split($1, a, "="); v=a[2]; sub(/-.*/, "", v); for (i=1;i<=NF;i++) { u=$i; x=$(i-1); if (u=="ms-cpu/server") sv=x; if (u=="ms-cpu/harness-start") hs=x; if (u=="faults/harness-start") hf=x; if (u=="ms-cpu/load") ld=x; if (u=="faults/load") lf=x; if (u=="ms-cpu/supervisor") sp=x; if (u=="faults/supervisor") sf=x; if (u=="ms-cpu/close") cl=x; if (u=="ms-cpu/children") ch=x; if (u=="ms-cpu/kit") kt=x; if (u=="ms/interpreter-start") fl=x }
                                printf "forked replica of the %-9s CPU: %s ms children = harness start %s (%s faults) + load %s (%s faults) + supervisor %s (%s faults) + close %s; fork server %s, kit %s (interpreter start %s ms wall)\n", v ",", ch, hs, hf, ld, lf, sp, sf, cl, sv, kt, fl }
/^BenchmarkReplicaBreakdown\/double/ { for (i=1;i<=NF;i++) if ($i=="ms-cpu/double") printf "deployment double, start and close:  %s ms CPU\n", $(i-1) }
/^BenchmarkScenarioCost/      { split($1, a, "="); j=a[2]; sub(/-.*/, "", j); for (i=1;i<=NF;i++) { if ($i=="ms/scenario") w=$(i-1); if ($i=="ms-cpu-kit/scenario") k=$(i-1); if ($i=="ms-cpu-replicas/scenario") r=$(i-1); if ($i=="ms/interpreter-start") f=$(i-1) }
                                printf "exploration scenario, minimal, %s job(s): %s ms wall, CPU %s ms replicas + %s ms kit (interpreter start %s ms)\n", j, w, r, k, f }
/^BenchmarkCallbackOverhead/  { for (i=1;i<=NF;i++) { if ($i=="µs/overhead") o=$(i-1); if ($i=="µs/roundtrip") r=$(i-1); if ($i=="µs/floor") f=$(i-1); if ($i=="µs/echo") e=$(i-1) }
                                printf "callback overhead (median):          %s µs (round trip %s µs, Python floor %s µs; bare pipe echo %s µs)\n", o, r, f, e }
/^BenchmarkReplicaStart/      { split($1, a, "/"); m=a[2]; sub(/-.*/, "", m); for (i=1;i<=NF;i++) if ($i=="ms/start") printf "replica start and load, %-11s  %s ms (median)\n", m ":", $(i-1) }
/^BenchmarkExploreThroughput/ { split($1, a, "="); p=a[2]; sub(/\/.*/, "", p); j=a[3]; sub(/-.*/, "", j); for (i=1;i<=NF;i++) { if ($i=="callbacks/s") c=$(i-1); if ($i=="callbacks/s/worker") w=$(i-1); if ($i=="callbacks/interpreter-start") r=$(i-1) }
                                printf "exploration, %-9s provider, %s job(s): %s callbacks/s (%s per worker; %s per bare interpreter start)\n", p, j, c, w, r }
/^BenchmarkCoverageCost/      { split($1, a, "="); v=a[2]; sub(/-.*/, "", v); for (i=1;i<=NF;i++) { if ($i=="ms/off") f=$(i-1); if ($i=="ms/on") n=$(i-1); if ($i=="wall-ratio") w=$(i-1); if ($i=="cpu-ratio") c=$(i-1) }
                                printf "coverage cost, python %-7s      suite %s ms off, %s ms on: wall x%s, cpu x%s\n", v, f, n, w, c }
/^BenchmarkEgressProxy/       { for (i=1;i<=NF;i++) { if ($i=="µs/added") added=$(i-1); if ($i=="µs/direct") d=$(i-1); if ($i=="µs/proxied") p=$(i-1) }
                                printf "declared service through the proxy: %s µs added per request (median; %s µs proxied, %s µs direct)\n", added, p, d }
/^BenchmarkAttributionCost/   { for (i=1;i<=NF;i++) { if ($i=="µs/added-http.client") ad=$(i-1); if ($i=="µs/bare-http.client") p=$(i-1); if ($i=="µs/added-httpx-async") ah=$(i-1); if ($i=="µs/bare-httpx-async") ph=$(i-1) }
                                printf "attribution per request:            %s µs added to http.client (%s µs bare, proxied), %s µs to httpx async (%s µs bare)\n", ad, p, ah, ph }
/^BenchmarkExploreMemory/     { split($1, a, "="); n=a[2]; sub(/-.*/, "", n); for (i=1;i<=NF;i++) { if ($i=="MiB-peak-heap") h=$(i-1); if ($i=="MiB-peak-live") l=$(i-1) }
                                printf "memory exploring %s scenarios:     peak live heap %s MiB (heap in use %s MiB)\n", n, l, h }
/^BenchmarkMaskHistory/       { split($1, a, "="); n=a[2]; sub(/-.*/, "", n); for (i=1;i<=NF;i++) { if ($i=="ms/masked") m=$(i-1); if ($i=="ms/floor") f=$(i-1); if ($i=="x-floor") x=$(i-1) }
                                printf "masking a history of %s turns:    %s ms (%sx the %s ms of the same output unmasked)\n", n, m, x, f }
/^BenchmarkSecretMaterial/    { split($1, a, "="); n=a[2]; sub(/-.*/, "", n); for (i=1;i<=NF;i++) { if ($i=="ms/hunt") m=$(i-1); if ($i=="ms/floor") f=$(i-1); if ($i=="alloc-bytes/material-byte") b=$(i-1) }
                                printf "hunting a %s MB material:          %s ms (floor: bytes.Index over the same texts, %s ms), %s bytes allocated per material byte\n", n, m, f, b }
' "$out"
printf 'harness work per plan, warm loop:  %s µs (best batch median, one process, no pipes: scripts/harness_warm.py)\n' \
  "$(python3 scripts/harness_warm.py internal/harness/python examples/providers/reference)"
if ! grep -q '^BenchmarkGuidedVsBlind/' "$out"; then
  echo "guided against blind exploration: skipped (set ASTRABOX_BENCH_GUIDED=1; docs/performance.md has the command)"
fi
if ! grep -q '^BenchmarkExploreMemory/' "$out"; then
  echo "peak heap: skipped (set ASTRABOX_BENCH_MEMORY=1 to explore 10,000 scenarios)"
fi
