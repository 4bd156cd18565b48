#pragma once
// ledger: the actor's SQLite database (`co_await c.db()`), rows in a table `entries`.
//
//   add(text) → the new row's id
//   list() → [{id, text}] in id order
//   count() → number of rows
//   integrityCheck() → the first row of PRAGMA integrity_check ("ok" for a sound database)
//   holdTransaction(rows, padBytes, ms) → the number of rows committed (0 if rolled back);
//       opens a transaction, inserts `rows` rows "held-<i>" (each with `padBytes` bytes of
//       padding), waits `ms` milliseconds, then commits — or rolls back when the actor starts
//       shutting down first. Meant for crash tests: kill the process while it waits.
//   holding() → true while a holdTransaction has its rows written and is waiting
//
// While a transaction is held, other writes on the same actor join it (one connection per
// actor); the crash test only reads `holding` then.

#include "rivetkit/actor.hpp"

namespace rivetkit::examples {

struct LedgerState {};
inline void to_json(Json& j, const LedgerState&) { j = Json::object(); }
inline void from_json(const Json&, LedgerState&) {}

struct LedgerVars {
    bool holding = false;
};

Actor<LedgerState, LedgerVars> ledger_actor();

}  // namespace rivetkit::examples
