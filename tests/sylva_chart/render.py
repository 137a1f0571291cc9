"""Renders the vendored sylva-units chart with Helm's own Go library (helm-python-sdk), offline.

    render.py CHART VALUES_FILE... > manifests.yaml

Values files are parsed by Helm (`values_from_yaml`) and merged in order as `helm template -f a -f
b` merges them (helm.sh/helm/v4 `pkg/cli/values/options.go`, `mergeMaps`: maps are merged key by
key, anything else in a later file replaces the earlier value); the chart then coalesces its own
defaults and validates the result against its values.schema.json, as `helm template` does. The
release is rendered as an upgrade of `sylva-units` in `sylva-system`, as Flux's helm-controller
does. Output: every non-empty rendered template as one multi-document YAML stream, each document
preceded by a `# Source:` comment. A Helm error exits 1 with Helm's message on stderr.
"""

import sys

import helm_python as helm


def merge_maps(a, b):
    out = dict(a)
    for key, value in b.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_maps(out[key], value)
        else:
            out[key] = value
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    chart_dir, files = argv[0], argv[1:]
    values = {}
    for path in files:
        with open(path, encoding="utf-8") as f:
            values = merge_maps(values, helm.values_from_yaml(f.read()) or {})
    try:
        chart = helm.Chart.load(chart_dir)
        chart.validate_schema(values)
        rendered = chart.render(
            values, name="sylva-units", namespace="sylva-system", is_upgrade=True
        )
    except helm.HelmError as e:
        print(f"helm: {e}", file=sys.stderr)
        return 1
    for source in sorted(rendered):
        text = rendered[source].strip()
        if text:
            sys.stdout.write(f"---\n# Source: {source}\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
