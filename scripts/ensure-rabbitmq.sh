#!/bin/sh
# Installs Debian's rabbitmq-server when it is missing, without starting a system-wide broker:
# the tests, the benchmarks and `jobhooks dev` start a private node of it on spare ports
# (tools/jobhooks_tools/local/rabbitmq.py) and need nothing else running.
set -eu

if [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || command -v rabbitmq-server >/dev/null 2>&1; then
    echo "rabbitmq-server is installed"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "rabbitmq-server is missing and this is not a Debian/Ubuntu system: install RabbitMQ" \
        "with your package manager, so that rabbitmq-server is on PATH" >&2
    exit 1
fi

if [ "$(id -u)" -eq 0 ]; then
    as_root() { "$@"; }
elif command -v sudo >/dev/null 2>&1; then
    as_root() { sudo "$@"; }
else
    echo "rabbitmq-server is missing; run as root: apt-get update && apt-get install -y" \
        "rabbitmq-server" >&2
    exit 1
fi

# The package's postinst starts the service through invoke-rc.d/deb-systemd-invoke, both of
# which ask policy-rc.d first; 101 means "action forbidden". An existing policy is kept aside
# and put back afterwards.
policy=/usr/sbin/policy-rc.d
saved=""
if [ -e "$policy" ]; then
    saved="$policy.jobhooks-saved"
    as_root mv "$policy" "$saved"
fi
restore_policy() {
    as_root rm -f "$policy"
    if [ -n "$saved" ]; then as_root mv "$saved" "$policy"; fi
}
trap restore_policy EXIT
printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null
as_root chmod 755 "$policy"

as_root apt-get update
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends rabbitmq-server

echo "rabbitmq-server installed (not started: the test suite starts private nodes)"
