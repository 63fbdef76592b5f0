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
 * task), {3, n} (memory or GPUs short on the machine). An RU that is not a number is the
 * error RUSKRANGE; an RU outside its machine's entry in :mach RUSKCORRUPT naming :mach (the
 * client sends only RUs of the machine by the shape it opened with, checked against
 * rusk:{meta}:shape: the entry disagrees with it; it was RUSKRANGE, exit 1).
 * The write scripts (commit, release) check everything that can fail before their first
 * write, since Redis keeps a failed script's earlier writes: a key of another type, a count
 * or field that is not an integer, is the error "RUSKCORRUPT <key> ..."; arguments that are
 * not numbers "RUSKARG ...". So a script writes all of its effect or nothing. Each key a
 * write script reads before it writes is checked by that read (RUSK_LUA_READ); only the keys
 * whose first touch is a write are asked their TYPE first (:rec when a commit has memory or
 * GPUs; :free by its STRLEN, :ver by its GET). What init_part (redis.c) always writes must be
 * there: :free long enough for every RU the script sets, :ver, the machine's :mach field, and
 * its :mem field and :gpu fields when the call uses them; a generation is a count below
 * 2^21, and memory and GPU shares are never negative. An absent key or field, a bitmap cut
 * short or a negative count is RUSKCORRUPT too (before, a deleted :free or :mem was written
 * afresh or read as 0, and a negative generation left an RU held that no release could free).
 * Every count is checked as Redis's HINCRBY and INCR take one (decimal, no sign, no leading
 * zero) and within a range where the script's own add cannot fail: :mem, :gpu and a
 * record's MiB and milli below 2^32 (a machine's MiB is a uint32; two such add far below
 * 2^63, and a commit's subtraction is checked not to go below 0), :ver below 2^63 - 1.
 * Before, a count of all digits past 2^63 (or `007`) passed, and the HINCRBY or INCR after
 * the first writes failed: a partial write, named as an I/O error on :mach. An owner that is
 * not a count from 1 (`abc`, `0`, `-1`, `1.5`; the scripts write the client's task id) is
 * RUSKCORRUPT where a script meets it (checked only on the branch that finds another owner:
 * no cost to a granted claim); the owners reader (redis.c owner_entry) checks it exactly.
 * Release ARGV: again, then (task, RU, gen) triples. Answers one code per lease: 0 released,
 * 1 free (double release), 2 another owner, 3 another generation (stale).
 * Recount: no ARGV; answers {held, free, mismatch, version, n_rus}, each RU counted at most
 * once (below). Owners: see below. Both read scripts ask the TYPE of all eight keys first
 * (RUSK_LUA_CHECK): a key of another type is RUSKCORRUPT naming it, where the recount named
 * rusk:{pN}:mach for a WRONGTYPE on :free; the recount never reads :gen, and a check that
 * finds corruption is what they are for (they run once a second or at the end, not per claim).
 */
#ifndef RUSK_STATE_REDIS_LUA_H
#define RUSK_STATE_REDIS_LUA_H

/* The checks of the write scripts (commit, release), cheaper than asking every key's TYPE
 * (the lean scripts, perf/RESULTS.md: 2 calls more per script, not 9). want[k]: the type of
 * KEYS[k]. rd(k, cmd, ...): cmd on KEYS[k] by redis.pcall; a WRONGTYPE answer is RUSKCORRUPT
 * naming the key and its type (the TYPE asked only then), any other error raised as it came.
 * blind(k): the TYPE check of a key whose first touch is a write (absent: fine). bits(k):
 * the length in bits of the bitmap KEYS[k] (:free), by its STRLEN; absent is RUSKCORRUPT.
 * fits(nb, ru): RUSKCORRUPT unless RU ru is inside a bitmap of nb bits. A count is decimal,
 * no sign, no leading zero (what HINCRBY and INCR take). small(k, f, v): v, the value of
 * field f of KEYS[k], a count below 2^32 (a Lua number, exact), else RUSKCORRUPT; a
 * digit string of 11 or more digits is past 2^32 by tonumber alone. count(k): KEYS[k]
 * (rusk:{pN}:ver) a count below 2^63 - 1, where its INCR cannot fail (compared as a string
 * at 19 digits: a Lua number is not exact there), by its GET; absent is RUSKCORRUPT.
 * int(k, f): the field f of the hash KEYS[k] by small (absent: 0). need(k, f): the same,
 * absent RUSKCORRUPT. owner(f, o): o, :own's field f, a count from 1, else RUSKCORRUPT.
 * gen_of(f): :gen's field f, a count below 2^21 (absent: 0). Each is called before the
 * script's first write only. */
#define RUSK_LUA_READ                                                                              \
	"local want = {'hash', 'hash', 'string', 'hash', 'hash', 'hash', 'string', 'hash'}\n"      \
	"local function corrupt(k, t)\n"                                                           \
	"  t = t or redis.call('TYPE', KEYS[k])['ok']\n"                                           \
	"  error({err = 'RUSKCORRUPT ' .. KEYS[k] .. ' has type ' .. t .. ', not ' .. want[k]})\n" \
	"end\n"                                                                                    \
	"local function rd(k, cmd, ...)\n"                                                         \
	"  local v = redis.pcall(cmd, KEYS[k], ...)\n"                                             \
	"  if type(v) == 'table' and v['err'] then\n"                                              \
	"    if string.sub(v['err'], 1, 9) == 'WRONGTYPE' then corrupt(k) end\n"                   \
	"    error(v)\n"                                                                           \
	"  end\n"                                                                                  \
	"  return v\n"                                                                             \
	"end\n"                                                                                    \
	"local function blind(k)\n"                                                                \
	"  local t = redis.call('TYPE', KEYS[k])['ok']\n"                                          \
	"  if t ~= want[k] and t ~= 'none' then corrupt(k, t) end\n"                               \
	"end\n"                                                                                    \
	"local function bad(k, what)\n"                                                            \
	"  error({err = 'RUSKCORRUPT ' .. KEYS[k] .. ' ' .. what})\n"                              \
	"end\n"                                                                                    \
	"local function bits(k)\n"                                                                 \
	"  local n = rd(k, 'STRLEN')\n"                                                            \
	"  if n == 0 then bad(k, 'is absent') end\n"                                               \
	"  return n * 8\n"                                                                         \
	"end\n"                                                                                    \
	"local function fits(nb, ru)\n"                                                            \
	"  if tonumber(ru) >= nb then bad(3, 'is ' .. nb / 8 .. ' bytes, too short for RU ' .. "   \
	"ru) end\n"                                                                                \
	"end\n"                                                                                    \
	"local function small(k, f, v)\n"                                                          \
	"  if not string.match(v, '^[1-9]%d*$') and v ~= '0' then bad(k, 'field ' .. f .. ' is "   \
	"not a count: ' .. v) end\n"                                                               \
	"  local n = tonumber(v)\n"                                                                \
	"  if n >= 4294967296 then bad(k, 'field ' .. f .. ' is past 2^32: ' .. v) end\n"          \
	"  return n\n"                                                                             \
	"end\n"                                                                                    \
	"local function count(k)\n"                                                                \
	"  local v = rd(k, 'GET')\n"                                                               \
	"  if not v then bad(k, 'is absent') end\n"                                                \
	"  if not string.match(v, '^[1-9]%d*$') and v ~= '0' then bad(k, 'is not a count: ' .. "   \
	"v) end\n"                                                                                 \
	"  if #v > 18 and (#v > 19 or v >= '9223372036854775807') then\n"                          \
	"    bad(k, 'is ' .. v .. ', past what INCR can add to')\n"                                \
	"  end\n"                                                                                  \
	"end\n"                                                                                    \
	"local function int(k, f, need)\n"                                                         \
	"  local v = rd(k, 'HGET', f)\n"                                                           \
	"  if not v then\n"                                                                        \
	"    if need then bad(k, 'has no field ' .. f) end\n"                                      \
	"    return 0\n"                                                                           \
	"  end\n"                                                                                  \
	"  return small(k, f, v)\n"                                                                \
	"end\n"                                                                                    \
	"local function owner(f, o)\n"                                                             \
	"  if not string.match(o, '^[1-9]%d*$') then bad(1, 'field ' .. f .. ' is not an owner: "  \
	"' .. o) end\n"                                                                            \
	"end\n"                                                                                    \
	"local function need(k, f) return int(k, f, true) end\n"                                   \
	"local function gen_of(f)\n"                                                               \
	"  local v = int(2, f)\n"                                                                  \
	"  if v >= 2097152 then bad(2, 'field ' .. f .. ' is not a generation: ' .. v) end\n"      \
	"  return v\n"                                                                             \
	"end\n"

/* A machine's shape from rusk:{pN}:mach (after RUSK_LUA_READ): first RU, RUs, MiB, GPUs. */
#define RUSK_LUA_SHAPE                                                                             \
	"local function shape(m)\n"                                                                \
	"  local s = rd(8, 'HGET', m)\n"                                                           \
	"  if not s then return nil end\n"                                                         \
	"  local a, b, c, d = string.match(s, '^(%d+),(%d+),(%d+),(%d+)$')\n"                      \
	"  if not a then bad(8, 'machine ' .. m .. ' is not a shape: ' .. s) end\n"                \
	"  return tonumber(a), tonumber(b), tonumber(c), tonumber(d), s\n"                         \
	"end\n"

/* The read scripts' checks (recount, owners): the type of each of the eight keys, and
 * rusk:{pN}:ver a count. */
#define RUSK_LUA_CHECK                                                                             \
	"local want = {'hash', 'hash', 'string', 'hash', 'hash', 'hash', 'string', 'hash'}\n"      \
	"for k = 1, 8 do\n"                                                                        \
	"  local t = redis.call('TYPE', KEYS[k])['ok']\n"                                          \
	"  if t ~= want[k] and t ~= 'none' then\n"                                                 \
	"    return redis.error_reply('RUSKCORRUPT ' .. KEYS[k] .. ' has type ' .. t .. ', not ' " \
	".. want[k])\n"                                                                            \
	"  end\n"                                                                                  \
	"end\n"                                                                                    \
	"local ver = redis.call('GET', KEYS[7])\n"                                                 \
	"if ver and not string.match(ver, '^%d+$') then\n"                                         \
	"  return redis.error_reply('RUSKCORRUPT ' .. KEYS[7] .. ' is not a count: ' .. ver)\n"    \
	"end\n"

/* Commit: the keys its first write touches (:free; :rec when the claim has memory or GPUs;
 * :ver) checked first, then every read (:mach, :gen, :own, :mem, :gpu) checked by itself. */
static const char rusk_lua_commit[] = RUSK_LUA_READ RUSK_LUA_SHAPE
        "local task, m = ARGV[1], ARGV[2]\n"
        "local mem, g, milli = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])\n"
        "local again = ARGV[6] == '1'\n"
        "if not (string.match(task, '^%d+$') and mem and g and milli and #ARGV >= 7) then\n"
        "  return redis.error_reply('RUSKARG commit arguments ' .. table.concat(ARGV, ' ', 1, "
        "math.min(#ARGV, 6)))\n"
        "end\n"
        "local nb = bits(3)\n"
        "count(7)\n"
        "if mem > 0 or g > 0 then blind(6) end\n"
        "local first, n, memcap, ngpu, desc = shape(m)\n"
        "if not first then bad(8, 'has no machine ' .. m) end\n"
        "local rus, gens, mine = {}, {}, 0\n"
        "for i = 7, #ARGV do\n"
        "  local r = tonumber(ARGV[i])\n"
        "  if r == nil then return redis.error_reply('RUSKRANGE RU ' .. ARGV[i] .. ' is not an "
        "RU') end\n"
        "  if r < first or r >= first + n then bad(8, 'machine ' .. m .. ' is ' .. desc .. ', "
        "without RU ' .. ARGV[i]) end\n"
        "  for j = 1, #rus do if rus[j] == ARGV[i] then return {2, i - 7} end end\n"
        "  fits(nb, r)\n"
        "  rus[#rus + 1] = ARGV[i]\n"
        "  gens[#gens + 1] = gen_of(ARGV[i])\n"
        "  local o = rd(1, 'HGET', ARGV[i])\n"
        "  if o then\n"
        "    if o == task then mine = mine + 1 else owner(ARGV[i], o) return {1, i - 7} end\n"
        "  end\n"
        "end\n"
        "if mine > 0 then\n"
        "  if again and mine == #rus then\n"
        "    local res = {0}\n"
        "    for j = 1, #rus do res[#res + 1] = gens[j] end\n"
        "    return res\n"
        "  end\n"
        "  for j = 1, #rus do if rd(1, 'HGET', rus[j]) == task then return {2, j "
        "- 1} end end\n"
        "end\n"
        "if mem > memcap or g > ngpu then return redis.error_reply('RUSKINFEASIBLE machine ' .. "
        "m) end\n"
        "if mem > 0 and need(4, m) < mem then return {3, #rus} end\n"
        "local picks = {}\n"
        "if g == 1 and milli < 1000 then\n"
        "  local best, bestf = -1, 1001\n"
        "  for k = 0, ngpu - 1 do\n"
        "    local f = need(5, m .. '.' .. k)\n"
        "    if f >= milli and f < bestf then best, bestf = k, f end\n"
        "  end\n"
        "  if best < 0 then return {3, #rus} end\n"
        "  picks[1] = best\n"
        "elseif g > 0 then\n"
        "  for k = 0, ngpu - 1 do\n"
        "    if #picks < g and need(5, m .. '.' .. k) == 1000 then picks[#picks + 1] = k "
        "end\n"
        "  end\n"
        "  if #picks < g then return {3, #rus} end\n"
        "end\n"
        "-- Every check is above: from here nothing fails.\n"
        "local res, lo = {0}, tonumber(rus[1])\n"
        "for j = 1, #rus do\n"
        "  redis.call('HSET', KEYS[1], rus[j], task)\n"
        "  redis.call('SETBIT', KEYS[3], tonumber(rus[j]), 0)\n"
        "  res[#res + 1] = gens[j]\n"
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

/* Release: :free and :ver checked first (written, not read), then a first pass decides every
 * lease and checks all it will parse or add to by reading it (:own, :gen, :rec, :mem, :gpu;
 * the same RU twice in one call: the second sees the first's release), the second writes. */
static const char rusk_lua_release[] = RUSK_LUA_READ
        "local again = ARGV[1] == '1'\n"
        "local nb = bits(3)\n"
        "count(7)\n"
        "local res, apply, done = {}, {}, {}\n"
        "for i = 2, #ARGV, 3 do\n"
        "  local task, ru, gen = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])\n"
        "  if not (gen and ru and string.match(ru, '^%d+$')) then\n"
        "    return redis.error_reply('RUSKARG release of RU ' .. tostring(ru) .. ' gen ' .. "
        "tostring(ARGV[i + 2]))\n"
        "  end\n"
        "  local o, cur\n"
        "  if done[ru] then o, cur = nil, done[ru] else\n"
        "    o = rd(1, 'HGET', ru)\n"
        "    cur = gen_of(ru)\n"
        "  end\n"
        "  local rc = 0\n"
        "  if not o then\n"
        "    if again and cur == (gen + 1) % 2097152 then rc = 0 else rc = 1 end\n"
        "  elseif o ~= task then owner(ru, o) rc = 2\n"
        "  elseif cur ~= gen then rc = 3\n"
        "  else\n"
        "    fits(nb, ru)\n"
        "    local t = {ru = ru, gen = (gen + 1) % 2097152}\n"
        "    local rec = rd(6, 'HGET', ru)\n"
        "    if rec then\n"
        "      local m, mem, milli, picks = string.match(rec, '^(%d+),(%d+),(%d+),([%d.]*)$')\n"
        "      if not m then\n"
        "        return redis.error_reply('RUSKCORRUPT ' .. KEYS[6] .. ' field ' .. ru .. ' is "
        "not a record: ' .. rec)\n"
        "      end\n"
        "      t.m, t.mem, t.milli, t.picks = m, small(6, ru, mem), small(6, ru, milli), {}\n"
        "      if t.mem > 0 then need(4, m) end\n"
        "      for k in string.gmatch(picks, '%d+') do\n"
        "        need(5, m .. '.' .. k)\n"
        "        t.picks[#t.picks + 1] = k\n"
        "      end\n"
        "    end\n"
        "    apply[#apply + 1] = t\n"
        "    done[ru] = t.gen\n"
        "  end\n"
        "  res[#res + 1] = rc\n"
        "end\n"
        "-- Every check is above: from here nothing fails.\n"
        "for j = 1, #apply do\n"
        "  local t = apply[j]\n"
        "  redis.call('HDEL', KEYS[1], t.ru)\n"
        "  redis.call('HSET', KEYS[2], t.ru, t.gen)\n"
        "  redis.call('SETBIT', KEYS[3], tonumber(t.ru), 1)\n"
        "  if t.m then\n"
        "    if t.mem > 0 then redis.call('HINCRBY', KEYS[4], t.m, t.mem) end\n"
        "    for k = 1, #t.picks do redis.call('HINCRBY', KEYS[5], t.m .. '.' .. t.picks[k], "
        "t.milli) end\n"
        "    redis.call('HDEL', KEYS[6], t.ru)\n"
        "  end\n"
        "end\n"
        "if #apply > 0 then redis.call('INCR', KEYS[7]) end\n"
        "return res\n";

/* Recount: each RU of the partition (0..n-1) is counted at most once. held: RUs with an
 * owner; free: RUs marked free; an RU is a mismatch when its mark disagrees with its owner,
 * either way: held and marked free (both), or neither held nor marked free (neither). As
 * the RUs held or free number held + free - both, neither = n - (held + free - both), so
 * mismatch = both + neither = n - held - free + 2 * both, exact. (It was both +
 * |n - free - held|, which counted an RU held and marked free twice, once as `both` and
 * once in the difference, and with an RU neither held nor free beside it, the two cancel
 * in the difference: 2 for 1 mismatch, 1 for 2.) An owner field that names no RU of the
 * partition (out of range, not a number in canonical form) and a free bit past the last RU
 * are not RUs: each is one mismatch of its own, and neither is counted held or free. */
static const char rusk_lua_recount[] = RUSK_LUA_CHECK
        "local part = redis.call('HGET', KEYS[8], 'part')\n"
        "if not part then return redis.error_reply('RUSKSTATE no partition shape in ' .. "
        "KEYS[8]) end\n"
        "local n = tonumber(string.match(part, '^%d+,(%d+),'))\n"
        "local own = redis.call('HGETALL', KEYS[1])\n"
        "local held, both, stray = 0, 0, 0\n"
        "for i = 1, #own, 2 do\n"
        "  local r = tonumber(own[i])\n"
        "  if r and r >= 0 and r < n and string.format('%d', r) == own[i] then\n"
        "    held = held + 1\n"
        "    if redis.call('GETBIT', KEYS[3], r) == 1 then both = both + 1 end\n"
        "  else\n"
        "    stray = stray + 1\n"
        "  end\n"
        "end\n"
        "local len, full = redis.call('STRLEN', KEYS[3]), math.floor((n + 7) / 8)\n"
        "local past = 0\n"
        "if len > full then past = redis.call('BITCOUNT', KEYS[3], full, -1) end\n"
        "for b = n, math.min(full, len) * 8 - 1 do past = past + redis.call('GETBIT', KEYS[3], "
        "b) end\n"
        "local free = redis.call('BITCOUNT', KEYS[3]) - past\n"
        "local mismatch = n - held - free + 2 * both + stray + past\n"
        "return {held, free, mismatch, tonumber(redis.call('GET', KEYS[7]) or '0'), n}\n";

/* Owners: no ARGV; answers (RU, owner, generation) triples of every held RU, as strings. */
static const char rusk_lua_owners[] =
        RUSK_LUA_CHECK "local own = redis.call('HGETALL', KEYS[1])\n"
                       "local res = {}\n"
                       "for i = 1, #own, 2 do\n"
                       "  res[#res + 1] = own[i]\n"
                       "  res[#res + 1] = own[i + 1]\n"
                       "  res[#res + 1] = redis.call('HGET', KEYS[2], own[i]) or '0'\n"
                       "end\n"
                       "return res\n";

#endif /* RUSK_STATE_REDIS_LUA_H */
