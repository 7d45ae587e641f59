# components/registry/etcd: etcd v3 through its HTTP/JSON gateway, with
# libcurl and json-c; a plugin, so a machine without them builds the rest.
PX_OPTIONAL([curl], [libcurl], [curl/curl.h], [curl], [curl_easy_init], [registry/etcd (HTTP client: libcurl)])
PX_OPTIONAL([jsonc], [json-c], [json-c/json.h], [json-c], [json_tokener_parse_ex], [JSON (json-c): registry entries, registry/etcd])
PX_COMPONENT([registry], [etcd], [plugin], [curl jsonc], [330])
