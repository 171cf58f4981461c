#!/usr/bin/env bash
# Build cost of #[retry_service_operation]: `cargo check` time of a crate with 200 annotated
# fns against the same crate without the attribute. Target: ratio <= 1.5.
#
#   benches/macro_build_cost.sh [runs]     # default 5 runs per variant, median reported
#   EXTRA_STMTS=10 benches/macro_build_cost.sh   # longer bodies: N more statements per fn
#
# The default bodies are 3-5 lines, the harshest case: the attribute's cost is per fn, so
# the ratio falls as bodies grow.
#
# Dependencies are built once first (not measured); then each run touches the crate's source
# and times a full (non-incremental) `cargo check` of that crate alone, so the number is the
# expansion plus the type and borrow checking of the generated code, plus cargo's own fixed
# cost, which both variants pay. Uses $CARGO_TARGET_DIR (or ./target) for its scratch
# workspace and builds.
set -euo pipefail

runs="${1:-5}"
extra_stmts="${EXTRA_STMTS:-0}"
filler=""
for k in $(seq 1 "$extra_stmts"); do
    filler+="        let _pad_$k = self.data.len().wrapping_mul($k);"$'\n'
done
repo="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$repo/target}"
work="$target/macro-build-cost"
export CARGO_TARGET_DIR="$work/target"
# Full re-check of the crate each run: with incremental compilation, touching an unchanged
# file would reuse almost every query and measure little but the expansion.
export CARGO_INCREMENTAL=0

rm -rf "$work/annotated" "$work/plain"
mkdir -p "$work"
cp "$repo/rust-toolchain.toml" "$work/"
cp "$repo/Cargo.lock" "$work/"
cat > "$work/Cargo.toml" <<EOF
[workspace]
members = ["annotated", "plain"]
resolver = "2"
EOF

# One crate; $1 = name, $2 = "yes" to annotate.
gen_crate() {
    local name="$1" annotate="$2" dir="$work/$1"
    mkdir -p "$dir/src"
    cat > "$dir/Cargo.toml" <<EOF
[package]
name = "$name"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
resilience = { path = "$repo" }
EOF
    local src="$dir/src/lib.rs"
    cat > "$src" <<'EOF'
#![allow(dead_code)]
use resilience::ResilienceError;

#[derive(Debug)]
pub struct ApiError(String);
impl From<ResilienceError> for ApiError {
    fn from(e: ResilienceError) -> Self {
        ApiError(e.to_string())
    }
}
impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub struct Client {
    data: Vec<u64>,
}

fn parse(s: &str) -> Result<u64, ApiError> {
    s.parse().map_err(|_| ApiError(s.to_owned()))
}
EOF
    local attr_read="" attr_write=""
    if [ "$annotate" = yes ]; then
        attr_read='    #[resilience::retry_service_operation(service = "bench_service", idempotent, max_attempts = 4)]'
        attr_write='    #[resilience::retry_service_operation(service = "bench_service")]'
    fi
    echo "impl Client {" >> "$src"
    # 200 fns: 100 sync reads, 50 async reads, 50 sync writes.
    for i in $(seq 1 100); do
        cat >> "$src" <<EOF
$attr_read
    pub fn read_$i(&self, key: &str, n: usize) -> Result<u64, ApiError> {
$filler        let base = parse(key)?;
        let extra = self.data.get(n).copied().unwrap_or($i);
        Ok(base + extra)
    }
EOF
    done
    for i in $(seq 1 50); do
        cat >> "$src" <<EOF
$attr_read
    pub async fn fetch_$i(&self, key: &str) -> Result<Vec<u64>, ApiError> {
$filler        let v = parse(key)?;
        Ok(self.data.iter().map(|d| d + v + $i).collect())
    }
EOF
    done
    for i in $(seq 1 50); do
        cat >> "$src" <<EOF
$attr_write
    pub fn write_$i(&mut self, value: u64) -> Result<usize, ApiError> {
$filler        if value == 0 {
            return Err(ApiError("zero".into()));
        }
        self.data.push(value + $i);
        Ok(self.data.len())
    }
EOF
    done
    echo "}" >> "$src"
}

gen_crate annotated yes
gen_crate plain no

cd "$work"
echo "warming dependencies (not measured)..." >&2
cargo check -q -p annotated -p plain

time_check() {
    local name="$1"
    touch "$work/$name/src/lib.rs"
    local t0 t1
    t0=$(date +%s.%N)
    cargo check -q -p "$name"
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

median() {
    sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

plain_times=()
annotated_times=()
for _ in $(seq 1 "$runs"); do
    # Interleaved, so drift in machine load hits both alike.
    plain_times+=("$(time_check plain)")
    annotated_times+=("$(time_check annotated)")
done

plain_median=$(printf '%s\n' "${plain_times[@]}" | median)
annotated_median=$(printf '%s\n' "${annotated_times[@]}" | median)
ratio=$(echo "$annotated_median / $plain_median" | bc -l)

printf 'cargo check, 200 fns (+%s statements each), median of %s runs\n' "$extra_stmts" "$runs"
printf '  without attribute: %.3f s  (%s)\n' "$plain_median" "${plain_times[*]}"
printf '  with attribute:    %.3f s  (%s)\n' "$annotated_median" "${annotated_times[*]}"
printf '  ratio:             %.2fx (target <= 1.5x)\n' "$ratio"
