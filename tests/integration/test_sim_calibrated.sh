#!/usr/bin/env bash
# pctl sim run --calibrated: pctl runs with the power model a quick calibration of the
# scenario's machine fits (the one the model-only baseline always has), instead of fitting
# one online from the machine's package energy. JSON and the text header name the model the
# run had; the figures move with it; the baseline is the same with or without the option; bad
# combinations are refused (exit 2) with a message naming the option.
set -u
. "$TEST_LIB"
S="$SRC_DIR/tests/scenarios"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# Two apps on the i7: the calibrated model places the first one on all 4 cores where the
# fitted one leaves it on 2 (docs/sim.md, "--calibrated").
"$PCTL" sim run "$S/together-i7-2apps.ini" --policy edp --json >"$T/fitted.json" ||
        fail "sim run --policy edp"
"$PCTL" sim run "$S/together-i7-2apps.ini" --policy edp --calibrated --json >"$T/cal.json" ||
        fail "sim run --policy edp --calibrated"
"$PCTL" sim run "$S/together-i7-2apps.ini" --policy edp --search model --json >"$T/model.json" ||
        fail "sim run --search model"
"$PCTL" sim run "$S/together-i7-2apps.ini" --policy edp --search model --calibrated --json \
        >"$T/model-cal.json" || fail "sim run --search model --calibrated"
python3 - "$T" <<'PY' || fail "--calibrated JSON: $(cat "$T/fitted.json" "$T/cal.json")"
import json, sys
t = sys.argv[1]
fit, cal, model, model_cal = (json.load(open(f"{t}/{n}.json"))
                              for n in ("fitted", "cal", "model", "model-cal"))
assert fit["power_model"] == "fitted", fit["power_model"]
assert cal["power_model"] == "calibrated", cal["power_model"]
# The model-only baseline is always calibrated; --calibrated gives it the same model.
assert model["power_model"] == "calibrated", model["power_model"]
assert model == model_cal, (model, model_cal)
# The model changes what pctl does, and so the figure (deterministic: virtual time, one seed).
a, b = fit["total"]["edp_sum"], cal["total"]["edp_sum"]
assert abs(a - b) > 1e-3 * a, (a, b)
assert [x["cores"] for x in fit["apps"]] != [x["cores"] for x in cal["apps"]], (fit, cal)
PY

# The text output says it in its header.
"$PCTL" sim run "$S/i7-p01.ini" --policy edp --calibrated >"$T/text" || fail "text run"
grep -q "^scenario .* under policy edp, power model calibrated: " "$T/text" ||
        fail "text header: $(head -1 "$T/text")"
"$PCTL" sim run "$S/i7-p01.ini" --policy edp >"$T/text" || fail "text run"
grep -q "^scenario .* under policy edp, power model fitted: " "$T/text" ||
        fail "text header: $(head -1 "$T/text")"

# Bad combinations and bad input change nothing and say what.
expect_exit 2 "--calibrated goes with --policy" \
        "$PCTL" sim run "$S/i7-p01.ini" --static cores=2,freq=max --calibrated
expect_exit 2 "is an option of 'pctl sim run'" \
        "$PCTL" sim oracle "$S/i7-p01.ini" --objective edp --calibrated
printf '[machine]\npreset = i7-4820k\nsockets = zero\n[app a]\ninstructions = 1e9\np = 0.5\n' \
        >"$T/bad.ini"
expect_exit 2 "bad.ini:3" "$PCTL" sim run "$T/bad.ini" --policy edp --calibrated
expect_exit 2 "no policy named 'nosuch'" \
        "$PCTL" sim run "$S/i7-p01.ini" --policy nosuch --calibrated
echo "ok: sim run --calibrated"
