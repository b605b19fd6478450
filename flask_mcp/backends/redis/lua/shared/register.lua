-- KEYS: workers. Mark this worker alive (before it counts requests in a session).
redis.call('ZADD', KEYS[1], fmt(clock()), ME)
return 1
