#!/bin/sh
# install-kcat.sh BIN: kcat (librdkafka's command-line client) for the tests,
# from Debian's packages, without installing anything into the system.
# `apt-get download` fetches kcat, librdkafka1 and libyajl2 (and any of
# librdkafka's own dependencies the machine lacks), `dpkg-deb -x` unpacks them
# into BIN/kcat.d, and BIN/kcat is a wrapper that points LD_LIBRARY_PATH at the
# unpacked libraries. The versions are the ones apt resolves from the
# machine's package lists. Does nothing when BIN/kcat already runs.
set -eu
bin=${1:?usage: install-kcat.sh BIN}
mkdir -p "$bin"
bin=$(cd "$bin" && pwd)
if "$bin/kcat" -V >/dev/null 2>&1; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
	echo "install-kcat: apt-get and dpkg-deb are needed to install kcat from Debian's packages;" >&2
	echo "install-kcat: put a working kcat at $bin/kcat, or set SHALE_SKIP_KCAT=1 to skip the kcat tests" >&2
	exit 1
fi
# librdkafka1's dependencies are on a base Debian system; fetch any that are not.
pkgs="kcat librdkafka1 libyajl2"
for p in libssl3 libsasl2-2 libsasl2-modules-db libdb5.3 libzstd1 liblz4-1 zlib1g; do
	if ! dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		pkgs="$pkgs $p"
	fi
done
dl=$(mktemp -d)
trap 'rm -rf "$dl"' EXIT
# apt-get download as root warns that its sandbox user cannot write here; harmless.
if ! (cd "$dl" && apt-get download -q $pkgs 2>"$dl/err"); then
	if [ "$(id -u)" = 0 ]; then
		echo "install-kcat: apt-get download failed, updating the package lists and trying again" >&2
		apt-get update -q >&2
		(cd "$dl" && apt-get download -q $pkgs 2>"$dl/err") || { cat "$dl/err" >&2; exit 1; }
	else
		cat "$dl/err" >&2
		echo "install-kcat: apt-get download $pkgs failed; run 'apt-get update' as root and try again" >&2
		exit 1
	fi
fi
rm -rf "$bin/kcat.d"
for deb in "$dl"/*.deb; do
	dpkg-deb -x "$deb" "$bin/kcat.d"
done
ls "$dl"/*.deb | sed 's|.*/||' >"$bin/kcat.d/PACKAGES"
libs=$(cd "$bin/kcat.d" && find . -name 'librdkafka.so.1' -exec dirname {} \; | head -n 1)
[ -n "$libs" ] || { echo "install-kcat: librdkafka.so.1 not found in the unpacked packages" >&2; exit 1; }
libs=${libs#./}
cat >"$bin/kcat" <<WRAPPER
#!/bin/sh
# kcat from Debian's packages, unpacked into kcat.d by build/install-kcat.sh (make tools).
d=\$(cd "\$(dirname "\$0")" && pwd)/kcat.d
LD_LIBRARY_PATH="\$d/$libs:\$d/${libs#usr/}\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "\$d/usr/bin/kcat" "\$@"
WRAPPER
chmod +x "$bin/kcat"
if LD_LIBRARY_PATH="$bin/kcat.d/$libs:$bin/kcat.d/${libs#usr/}" ldd "$bin/kcat.d/usr/bin/kcat" | grep 'not found' >&2; then
	echo "install-kcat: the libraries above are missing" >&2
	exit 1
fi
"$bin/kcat" -V >/dev/null || { echo "install-kcat: $bin/kcat does not run" >&2; exit 1; }
echo "install-kcat: $bin/kcat ($(tr '\n' ' ' <"$bin/kcat.d/PACKAGES"))"
