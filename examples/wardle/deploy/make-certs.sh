#!/usr/bin/env bash
# Makes wardle's serving certificate for the Service api.wardle.svc, signed
# by a CA of its own, stores it in the Secret wardle/wardle-serving, and
# fills the CA into the APIServices. Needs openssl and kubectl (pointed at
# the cluster). Keep ca.key somewhere safe, or delete it.
set -euo pipefail
cd "$(dirname "$0")"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 365 \
	-subj "/CN=wardle-ca" -keyout "$dir/ca.key" -out "$dir/ca.crt"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	-subj "/CN=api.wardle.svc" -keyout "$dir/tls.key" -out "$dir/tls.csr"
printf 'subjectAltName=DNS:api.wardle.svc,DNS:api.wardle.svc.cluster.local\nextendedKeyUsage=serverAuth\n' > "$dir/ext"
openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
	-days 365 -extfile "$dir/ext" -out "$dir/tls.crt"

kubectl apply -f 00-namespace.yaml
kubectl -n wardle create secret tls wardle-serving --cert="$dir/tls.crt" --key="$dir/tls.key" \
	--dry-run=client -o yaml | kubectl apply -f -
ca=$(base64 < "$dir/ca.crt" | tr -d '\n')
sed "s|CA_BUNDLE|$ca|" 40-apiservice.yaml > apiservice.generated.yaml
echo "wrote apiservice.generated.yaml; apply it after the rest:"
echo "  kubectl apply -f 10-rbac.yaml -f 20-kubeconfig.yaml -f 30-deployment.yaml -f apiservice.generated.yaml"
