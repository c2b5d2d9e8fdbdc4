# Sourced (not run) by the device scripts that need Python packages the device image lacks: installs the
# wheels carried in .whl/ (made here by scripts/device/download_wheels.sh) into /tmp/site and puts
# it first on PYTHONPATH. Without .whl/ it does nothing, and the script's own check names what is missing.
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
