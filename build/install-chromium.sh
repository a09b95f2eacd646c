#!/bin/sh
# install-chromium.sh BIN: headless Chromium for the console's browser test
# (console/browser_test.go), from Debian's packages, without installing
# anything into the system. `apt-get -s install chromium` names the packages
# the machine lacks (chromium, chromium-common and the libraries not already
# installed), `apt-get download` fetches them, `dpkg-deb -x` unpacks them into
# BIN/chromium.d, and BIN/chromium is a wrapper that points LD_LIBRARY_PATH at
# the unpacked libraries. The versions are the ones apt resolves from the
# machine's package lists. Does nothing when BIN/chromium already runs.
set -eu
bin=${1:?usage: install-chromium.sh BIN}
mkdir -p "$bin"
bin=$(cd "$bin" && pwd)
if "$bin/chromium" --headless --version >/dev/null 2>&1; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
	echo "install-chromium: apt-get and dpkg-deb are needed to install chromium from Debian's packages;" >&2
	echo "install-chromium: put a working chromium at $bin/chromium or point SHALE_CHROMIUM at one" >&2
	exit 1
fi
resolve() {
	apt-get -s -q install --no-install-recommends chromium 2>/dev/null | awk '$1 == "Inst" { print $2 }' | tr '\n' ' '
}
pkgs=$(resolve)
if [ -z "$pkgs" ] && [ "$(id -u)" = 0 ]; then
	apt-get update -q >&2
	pkgs=$(resolve)
fi
case " $pkgs " in
*" chromium "*) ;;
*)
	# chromium itself is installed system-wide: use it.
	if command -v chromium >/dev/null 2>&1; then
		ln -sf "$(command -v chromium)" "$bin/chromium"
		exit 0
	fi
	echo "install-chromium: apt does not offer chromium; run 'apt-get update' as root and try again" >&2
	exit 1
	;;
esac
dl=$(mktemp -d)
trap 'rm -rf "$dl"' EXIT
# apt-get download as root warns that its sandbox user cannot write here; harmless.
if ! (cd "$dl" && apt-get download -q $pkgs 2>"$dl/err"); then
	if [ "$(id -u)" = 0 ]; then
		echo "install-chromium: apt-get download failed, updating the package lists and trying again" >&2
		apt-get update -q >&2
		(cd "$dl" && apt-get download -q $pkgs 2>"$dl/err") || { cat "$dl/err" >&2; exit 1; }
	else
		cat "$dl/err" >&2
		echo "install-chromium: apt-get download $pkgs failed; run 'apt-get update' as root and try again" >&2
		exit 1
	fi
fi
rm -rf "$bin/chromium.d"
for deb in "$dl"/*.deb; do
	dpkg-deb -x "$deb" "$bin/chromium.d"
done
ls "$dl"/*.deb | sed 's|.*/||' >"$bin/chromium.d/PACKAGES"
[ -x "$bin/chromium.d/usr/lib/chromium/chromium" ] || { echo "install-chromium: usr/lib/chromium/chromium not found in the unpacked packages" >&2; exit 1; }
libs=$(cd "$bin/chromium.d" && find . -name '*.so*' -type f -exec dirname {} \; | sed 's|^\./||' | sort -u | tr '\n' ':')
cat >"$bin/chromium" <<WRAPPER
#!/bin/sh
# chromium from Debian's packages, unpacked into chromium.d by build/install-chromium.sh (make tools).
d=\$(cd "\$(dirname "\$0")" && pwd)/chromium.d
libs=""
for l in $(echo "$libs" | tr ':' ' '); do libs="\$libs\$d/\$l:"; done
LD_LIBRARY_PATH="\$libs\${LD_LIBRARY_PATH:-}" exec "\$d/usr/lib/chromium/chromium" "\$@"
WRAPPER
chmod +x "$bin/chromium"
"$bin/chromium" --headless --no-sandbox --version >/dev/null || { echo "install-chromium: $bin/chromium does not run" >&2; exit 1; }
echo "install-chromium: $bin/chromium ($(tr '\n' ' ' <"$bin/chromium.d/PACKAGES"))"
