# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""kubernetes.core's connection options (module_utils/kubeconfig/connection.py), shared by every cluster action."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  host:
    description:
      - URL of the API server, as in kubernetes.core. Can also be given by the host's C(kube_host) variable, or
        the E(K8S_AUTH_HOST) environment variable.
      - With a credential (O(api_key), O(username) and O(password), or O(client_cert) and O(client_key)) it is a
        complete connection and no kubeconfig is read, as in kubernetes.core; the result's C(kubeconfig.provenance)
        says so. Without one, it replaces the server of the kubeconfig's context.
      - "Each connection option is taken from the task parameter, else the host's C(kube_<option>) variable (so
        plan phases get them too, and a host's own value beats one set for the whole controller or play), else its
        E(K8S_AUTH_*) variable: from the task's C(environment) keyword (play, block, role or task), then the
        controller's environment. An empty value is unset. See the collection's C(docs/kubeconfig.md#precedence)."
    type: str
  api_key:
    description:
      - Bearer token used to authenticate with the API (E(K8S_AUTH_API_KEY), C(kube_api_key)). Replaces what the
        kubeconfig's user authenticates with. Never shown in results, messages or logs.
    type: str
  username:
    description:
      - Username for HTTP Basic authentication (E(K8S_AUTH_USERNAME), C(kube_username)); needs O(password).
      - Sent as HTTP Basic credentials, as a kubeconfig user's C(username) is. Kubernetes API servers have not
        accepted them since 1.19; only an authenticating proxy in front of one would.
      - kubernetes.core documents this meaning but its client sends no credentials for it.
    type: str
  password:
    description:
      - Password for HTTP Basic authentication (E(K8S_AUTH_PASSWORD), C(kube_password)); see O(username).
    type: str
  client_cert:
    description:
      - Path of a client certificate (E(K8S_AUTH_CLIENT_CERT) or E(K8S_AUTH_CERT_FILE), C(kube_client_cert)).
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path of the client certificate's key (E(K8S_AUTH_CLIENT_KEY) or E(K8S_AUTH_KEY_FILE), C(kube_client_key)).
    type: path
    aliases: [key_file]
  ca_cert:
    description:
      - Path of the CA certificate(s) the API server's certificate is checked against (E(K8S_AUTH_CA_CERT) or
        E(K8S_AUTH_SSL_CA_CERT), C(kube_ca_cert)); the full chain. Replaces the kubeconfig cluster's CA.
    type: path
    aliases: [ssl_ca_cert]
  validate_certs:
    description:
      - Whether to verify the API server's certificate (E(K8S_AUTH_VALIDATE_CERTS) or E(K8S_AUTH_VERIFY_SSL),
        C(kube_validate_certs)). In the environment, V(0), V(false) and V(no) (any case) are false and any other
        value true, as in kubernetes.core.
      - Default is the kubeconfig's C(insecure-skip-tls-verify), or V(true) for a complete connection (against the
        system's CAs when no O(ca_cert) is given).
    type: bool
    aliases: [verify_ssl]
  proxy:
    description:
      - URL of an HTTP proxy to reach the API server through (E(K8S_AUTH_PROXY), C(kube_proxy)); replaces the
        kubeconfig cluster's C(proxy-url). E(HTTP_PROXY) and E(HTTPS_PROXY) are not read, as in kubernetes.core.
    type: str
  no_proxy:
    description:
      - Comma-separated hosts, domains, IP addresses or CIDRs reached without the proxy (E(K8S_AUTH_NO_PROXY),
        C(kube_no_proxy)), matched against the API server as the kubernetes client matches them. E(NO_PROXY) is
        not read.
    type: str
  proxy_headers:
    description:
      - Headers for the HTTP proxy in kubernetes.core. Not supported by phasekit.kube (a kubeconfig cannot carry
        them, so helm and kubectl given the resolved kubeconfig could not send them). Setting it, or its
        E(K8S_AUTH_PROXY_HEADERS_*) variables, is an error.
    type: dict
    suboptions:
      proxy_basic_auth:
        description: Colon-separated username:password for the proxy (E(K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH)).
        type: str
      basic_auth:
        description: Colon-separated username:password (E(K8S_AUTH_PROXY_HEADERS_BASIC_AUTH)).
        type: str
      user_agent:
        description: User-agent string (E(K8S_AUTH_PROXY_HEADERS_USER_AGENT)).
        type: str
  persist_config:
    description:
      - In kubernetes.core, whether refreshed tokens are saved back to the kubeconfig file
        (E(K8S_AUTH_PERSIST_CONFIG), C(kube_persist_config)). phasekit.kube never writes to a kubeconfig source;
        V(true) is an error, V(false) is accepted.
    type: bool
  impersonate_user:
    description:
      - User to impersonate for every request (E(K8S_AUTH_IMPERSONATE_USER), C(kube_impersonate_user)), as the
        kubeconfig user's C(as); helm and commands given the kubeconfig impersonate too.
    type: str
  impersonate_groups:
    description:
      - Groups to impersonate (E(K8S_AUTH_IMPERSONATE_GROUPS), comma-separated; C(kube_impersonate_groups)); needs
        O(impersonate_user).
    type: list
    elements: str
notes:
  - The connection options are kubernetes.core's (C(kubernetes.core.k8s_auth_options)) with the same names, aliases
    and environment variables, so AWX's built-in C(OpenShift or Kubernetes API Bearer Token) credential works as
    attached.
"""
