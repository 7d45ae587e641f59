# components/registry/redis: a registry on a redis server through hiredis; a plugin,
# so a machine without hiredis still builds and runs the rest.
PX_OPTIONAL([hiredis], [hiredis], [hiredis/hiredis.h], [hiredis], [redisConnectWithTimeout], [registry/redis (names in a redis server)])
PX_COMPONENT([registry], [redis], [plugin], [hiredis], [320])
