#!/bin/sh
# Setup cost of `slate run` against bare `pi -p` on the same fake-LLM work (docs/performance.md,
# "Setup cost of slate run"). Needs hyperfine, python3, a release build
# (`cargo build --release --bin slate`) and pi 1.6 (`. ~/.cache/slate-pi/env`, `SLATE_PI`).
#
#   benches/setup_cost.sh            # 1 task and 16 tasks, 20 runs each after 3 warm-ups
#   RUNS=40 benches/setup_cost.sh
#   SLATE_BEFORE=/path/to/older/slate benches/setup_cost.sh   # adds that binary as a third command
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
slate="${SLATE_BIN:-$here/target/release/slate}"
pi="${SLATE_PI:?source ~/.cache/slate-pi/env first}"
runs="${RUNS:-20}"
port="${PORT:-18080}"
work=$(mktemp -d /tmp/slate-setup-cost.XXXXXX)
trap 'kill "$fake" 2>/dev/null; rm -rf "$work"' EXIT

mkdir -p "$work/agent" "$work/home" "$work/project"
sed "s#http://127.0.0.1:18080/v1#http://127.0.0.1:$port/v1#" \
    "$here/tests/support/agent_template/models.json" > "$work/agent/models.json"
cp "$here/tests/support/agent_template/settings.json" "$work/agent/settings.json"
python3 "$here/../shared/pi/fake_llm.py" --port "$port" >/dev/null 2>&1 &
fake=$!
sleep 0.5

# The same hermetic environment for both sides; Slate's cache goes to its own directory.
export PI_CODING_AGENT_DIR="$work/agent" PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 PI_TELEMETRY=0
export HOME="$work/home" XDG_CACHE_HOME="$work/cache" XDG_RUNTIME_DIR="$work/run"
mkdir -p "$work/run" && chmod 700 "$work/run"
cd "$work/project"

one='{"assignment":"SCENARIO:TEXT say hello","profile":"scout"}'
printf '%s\n' "$one" > one.json
python3 -c "import json; print(json.dumps({'tasks': [{'assignment': f'SCENARIO:TEXT say hello {i}', 'profile': 'scout'} for i in range(16)]}))" > sixteen.json
cat > bare16.sh <<EOF
#!/bin/sh
i=0
while [ \$i -lt 16 ]; do
  '$pi' -p --no-session "SCENARIO:TEXT say hello \$i" >/dev/null &
  i=\$((i + 1))
done
wait
EOF
chmod +x bare16.sh

for request in one.json sixteen.json; do
  "$slate" run "$request" >/dev/null 2>&1 || { echo "slate run $request failed:"; "$slate" run "$request"; exit 1; }
done

set --
if [ -n "${SLATE_BEFORE:-}" ]; then
  set -- -n 'slate run before (1 task)' "'$SLATE_BEFORE' run one.json"
fi
hyperfine -N --warmup 3 --runs "$runs" \
    -n 'bare pi -p (1 task)' "'$pi' -p --no-session 'SCENARIO:TEXT say hello'" \
    -n 'pi -p with the worker switches (1 task)' \
    "'$pi' -p --no-session -ne --no-mcp -ns -np --no-themes -nc 'SCENARIO:TEXT say hello'" \
    -n 'slate run (1 task)' "'$slate' run one.json" "$@"
set --
if [ -n "${SLATE_BEFORE:-}" ]; then
  set -- -n 'slate run before (16 tasks)' "'$SLATE_BEFORE' run sixteen.json"
fi
hyperfine -N --warmup 2 --runs "$runs" \
    -n 'bare pi -p (16 tasks in parallel)' "./bare16.sh" \
    -n 'slate run (16 tasks)' "'$slate' run sixteen.json" "$@"
# Interleaved pairs (bare, slate, bare, slate, …): robust to load drifting between hyperfine's
# sequential batches on a shared machine.
python3 "$here/benches/setup_cost_pairs.py" "$slate" "${PAIRS:-12}"
