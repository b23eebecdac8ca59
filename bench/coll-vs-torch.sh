#!/usr/bin/env bash
# On a machine with 2+ GPUs, Open MPI and PyTorch: gpuscale coll in both
# launch modes and torch.distributed (NCCL) in one go, same ops and sizes,
# then the comparison table (busbw ratio per op at 64 MiB and above, 8 B
# allreduce latency). usage: bench/coll-vs-torch.sh [GPUSCALE_BINARY]
# Results go to $OUT (default ./coll-vs-torch).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/gpuscale}
out=${OUT:-coll-vs-torch}
ngpu=${NGPU:-2}
mkdir -p "$out"
# Never NVLink multicast (NVLS): both sides measure the same NCCL paths.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
big=(-b 64M -e 1G --stepfactor 2 -n 20 -w 5 -c 0 --no-progress -q)
small=(-b 8 -e 8 -n 1000 -w 100 --no-progress -q)
mpi=(mpirun --allow-run-as-root --oversubscribe -np "$ngpu" -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH)

"$bin" coll all "${big[@]}" -g "$ngpu" --out "$out/threads-big.json" > "$out/threads-big.txt"
"$bin" coll allreduce "${small[@]}" -g "$ngpu" --out "$out/threads-small.json" > "$out/threads-small.txt"
"${mpi[@]}" "$bin" coll all "${big[@]}" --out "$out/mpi-big.json" > "$out/mpi-big.txt"
"${mpi[@]}" "$bin" coll allreduce "${small[@]}" --out "$out/mpi-small.json" > "$out/mpi-small.txt"
torchrun --standalone --nproc_per_node "$ngpu" bench/coll_vs_torch.py measure --out "$out/torch.json"

merge() { # one document's collective points with another's, for compare
  python3 - "$@" <<'PY'
import json, sys
a, b, dst = sys.argv[1:4]
da, db = json.load(open(a)), json.load(open(b))
da["measurements"] += db["measurements"]
json.dump(da, open(dst, "w"))
PY
}
merge "$out/threads-big.json" "$out/threads-small.json" "$out/threads.json"
merge "$out/mpi-big.json" "$out/mpi-small.json" "$out/mpi.json"
python3 bench/coll_vs_torch.py compare --torch "$out/torch.json" \
  --gpuscale threads="$out/threads.json" mpi="$out/mpi.json" | tee "$out/compare.txt"
