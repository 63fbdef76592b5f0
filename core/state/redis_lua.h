/* SPDX-License-Identifier: MIT */
/*
 * The Lua scripts of the Redis backend (redis.c has the layout). KEYS are always the eight
 * keys of one partition, in this order: own, gen, free, mem, gpu, rec, ver, mach. Every
 * script checks before it writes: Redis does not roll back a script's writes when it fails
 * part way, so once the first write is made nothing can fail (rules of core/kernel/ru.c:
 * a commit takes free RUs only, a release needs owner and generation to match).
 *
 * Commit ARGV: task, machine (local), mem MiB, gpus, milli per GPU, again (1: a resend after
 * an unknown outcome), then the RUs (local). Answers {0, gen...} (taken; gens in order),
 * {1, i} (RU i held by another task), {2, i} (RU i listed twice or already held by this
 * task), {3, n} (memory or GPUs short on the machine). A machine or RU outside the
 * partition's shape is an error reply starting RUSK.
 * Release ARGV: again, then (task, RU, gen) triples. Answers one code per lease: 0 released,
 * 1 free (double release), 2 another owner, 3 another generation (stale).
 * Recount: no ARGV; answers {held, free, mismatch, version, n_rus}. Owners: see below.
 */
#ifndef RUSK_STATE_REDIS_LUA_H
#define RUSK_STATE_REDIS_LUA_H

#define RUSK_LUA_SHAPE                                                                             \
	"local function shape(m)\n"                                                                \
	"  local s = redis.call('HGET', KEYS[8], m)\n"                                             \
	"  if not s then return nil end\n"                                                         \
	"  local a, b, c, d = string.match(s, '^(%d+),(%d+),(%d+),(%d+)$')\n"                      \
	"  return tonumber(a), tonumber(b), tonumber(c), tonumber(d)\n"                            \
	"end\n"

static const char rusk_lua_commit[] = RUSK_LUA_SHAPE
        "local task, m = ARGV[1], ARGV[2]\n"
        "local mem, g, milli = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])\n"
        "local again = ARGV[6] == '1'\n"
        "local first, n, memcap, ngpu = shape(m)\n"
        "if not first then return redis.error_reply('RUSKSTATE no machine ' .. m .. ' in ' .. "
        "KEYS[8]) end\n"
        "local rus, mine = {}, 0\n"
        "for i = 7, #ARGV do\n"
        "  local r = tonumber(ARGV[i])\n"
        "  if r == nil or r < first or r >= first + n then\n"
        "    return redis.error_reply('RUSKRANGE RU ' .. ARGV[i] .. ' is not on machine ' .. m)\n"
        "  end\n"
        "  for j = 1, #rus do if rus[j] == ARGV[i] then return {2, i - 7} end end\n"
        "  rus[#rus + 1] = ARGV[i]\n"
        "  local o = redis.call('HGET', KEYS[1], ARGV[i])\n"
        "  if o then if o == task then mine = mine + 1 else return {1, i - 7} end end\n"
        "end\n"
        "if mine > 0 then\n"
        "  if again and mine == #rus then\n"
        "    local res = {0}\n"
        "    for j = 1, #rus do res[#res + 1] = tonumber(redis.call('HGET', KEYS[2], rus[j]) or "
        "'0') end\n"
        "    return res\n"
        "  end\n"
        "  for j = 1, #rus do if redis.call('HGET', KEYS[1], rus[j]) == task then return {2, j "
        "- 1} end end\n"
        "end\n"
        "if mem > memcap or g > ngpu then return redis.error_reply('RUSKINFEASIBLE machine ' .. "
        "m) end\n"
        "if mem > 0 and tonumber(redis.call('HGET', KEYS[4], m) or '0') < mem then return {3, "
        "#rus} end\n"
        "local picks = {}\n"
        "if g == 1 and milli < 1000 then\n"
        "  local best, bestf = -1, 1001\n"
        "  for k = 0, ngpu - 1 do\n"
        "    local f = tonumber(redis.call('HGET', KEYS[5], m .. '.' .. k) or '0')\n"
        "    if f >= milli and f < bestf then best, bestf = k, f end\n"
        "  end\n"
        "  if best < 0 then return {3, #rus} end\n"
        "  picks[1] = best\n"
        "elseif g > 0 then\n"
        "  for k = 0, ngpu - 1 do\n"
        "    if #picks < g and tonumber(redis.call('HGET', KEYS[5], m .. '.' .. k) or '0') == "
        "1000 then picks[#picks + 1] = k end\n"
        "  end\n"
        "  if #picks < g then return {3, #rus} end\n"
        "end\n"
        "local res, lo = {0}, tonumber(rus[1])\n"
        "for j = 1, #rus do\n"
        "  redis.call('HSET', KEYS[1], rus[j], task)\n"
        "  redis.call('SETBIT', KEYS[3], tonumber(rus[j]), 0)\n"
        "  res[#res + 1] = tonumber(redis.call('HGET', KEYS[2], rus[j]) or '0')\n"
        "  if tonumber(rus[j]) < lo then lo = tonumber(rus[j]) end\n"
        "end\n"
        "if mem > 0 or g > 0 then\n"
        "  if mem > 0 then redis.call('HINCRBY', KEYS[4], m, -mem) end\n"
        "  for j = 1, #picks do redis.call('HINCRBY', KEYS[5], m .. '.' .. picks[j], -milli) "
        "end\n"
        "  redis.call('HSET', KEYS[6], lo, m .. ',' .. mem .. ',' .. milli .. ',' .. "
        "table.concat(picks, '.'))\n"
        "end\n"
        "redis.call('INCR', KEYS[7])\n"
        "return res\n";

static const char rusk_lua_release[] =
        "local again = ARGV[1] == '1'\n"
        "local res, changed = {}, false\n"
        "for i = 2, #ARGV, 3 do\n"
        "  local task, ru, gen = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])\n"
        "  local o = redis.call('HGET', KEYS[1], ru)\n"
        "  local cur = tonumber(redis.call('HGET', KEYS[2], ru) or '0')\n"
        "  local rc = 0\n"
        "  if not o then\n"
        "    if again and cur == (gen + 1) % 2097152 then rc = 0 else rc = 1 end\n"
        "  elseif o ~= task then rc = 2\n"
        "  elseif cur ~= gen then rc = 3\n"
        "  else\n"
        "    redis.call('HDEL', KEYS[1], ru)\n"
        "    redis.call('HSET', KEYS[2], ru, (gen + 1) % 2097152)\n"
        "    redis.call('SETBIT', KEYS[3], tonumber(ru), 1)\n"
        "    local rec = redis.call('HGET', KEYS[6], ru)\n"
        "    if rec then\n"
        "      local m, mem, milli, picks = string.match(rec, '^(%d+),(%d+),(%d+),(.*)$')\n"
        "      if tonumber(mem) > 0 then redis.call('HINCRBY', KEYS[4], m, tonumber(mem)) end\n"
        "      for k in string.gmatch(picks, '%d+') do redis.call('HINCRBY', KEYS[5], m .. '.' "
        ".. k, tonumber(milli)) end\n"
        "      redis.call('HDEL', KEYS[6], ru)\n"
        "    end\n"
        "    changed = true\n"
        "  end\n"
        "  res[#res + 1] = rc\n"
        "end\n"
        "if changed then redis.call('INCR', KEYS[7]) end\n"
        "return res\n";

static const char rusk_lua_recount[] =
        "local part = redis.call('HGET', KEYS[8], 'part')\n"
        "if not part then return redis.error_reply('RUSKSTATE no partition shape in ' .. "
        "KEYS[8]) end\n"
        "local n = tonumber(string.match(part, '^%d+,(%d+),'))\n"
        "local own = redis.call('HGETALL', KEYS[1])\n"
        "local held, mismatch = #own / 2, 0\n"
        "for i = 1, #own, 2 do\n"
        "  if redis.call('GETBIT', KEYS[3], tonumber(own[i])) == 1 then mismatch = mismatch + 1 "
        "end\n"
        "end\n"
        "local free = redis.call('BITCOUNT', KEYS[3])\n"
        "if free + held ~= n then mismatch = mismatch + math.abs(n - free - held) end\n"
        "return {held, free, mismatch, tonumber(redis.call('GET', KEYS[7]) or '0'), n}\n";

/* Owners: no ARGV; answers (RU, owner, generation) triples of every held RU, as strings. */
static const char rusk_lua_owners[] =
        "local own = redis.call('HGETALL', KEYS[1])\n"
        "local res = {}\n"
        "for i = 1, #own, 2 do\n"
        "  res[#res + 1] = own[i]\n"
        "  res[#res + 1] = own[i + 1]\n"
        "  res[#res + 1] = redis.call('HGET', KEYS[2], own[i]) or '0'\n"
        "end\n"
        "return res\n";

#endif /* RUSK_STATE_REDIS_LUA_H */
