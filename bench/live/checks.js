// What bench/live/*.sh share when they check a report.json against their targets: the report's
// runs by gateway, MET/MISS lines, and the live figures against the planner's prediction.
const fs = require('fs');

function load(path) {
  const j = JSON.parse(fs.readFileSync(path));
  const by = {};
  for (const r of j.runs) by[r.gateway] = r;
  return { j, by };
}

class Checker {
  constructor() { this.ok = true; }
  check(what, value, target, pass) {
    console.log(`${pass ? 'MET ' : 'MISS'} ${what}: ${value} (target ${target})`);
    this.ok = this.ok && pass;
  }
  // Each gateway's live `figures` (names of [live, predicted] getters) within 15% of the
  // planner's prediction for the same set-up.
  planner(j, by, figures) {
    if (!j.planner) return;
    for (const [gw, policy] of Object.entries(j.planner.policy_of)) {
      const r = by[gw], p = j.planner.reports.find(x => x.policy === policy);
      if (!r || r.failure || !p) continue;
      for (const [what, live, pred] of figures(r, p)) {
        const x = live / pred;
        this.check(`${gw} live / planner ${what}`, x.toFixed(2) + 'x', '0.85-1.15x', x >= 0.85 && x <= 1.15);
      }
    }
  }
  exit() { process.exit(this.ok ? 0 : 1); }
}

module.exports = { load, Checker };
