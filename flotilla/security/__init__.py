"""How a process trusts and reaches the plane: certificates and TLS settings (tls), encryption at
rest of Secrets (crypto), and the current context that names the plane's etcd, certificate and
key file (context). Below the store, which uses all three to connect and to encrypt."""
