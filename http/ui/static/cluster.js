// The cluster page: the members, their slots and task store shards, as
// the member that answers sees them.

import { call } from './api.js';
import { el, text, table, fields } from './dom.js';

// clusterPage: GET /v1/cluster.
export async function clusterPage(view) {
  const c = await call('GET', '/cluster');
  if (c.mode !== 'cluster') {
    view.replaceChildren(
      el('h1', {}, 'Cluster'),
      fields('cluster-fields', [['Mode', c.mode, 'cluster-mode']]),
      el('p', {}, 'This process runs alone: it owns every slot and scans every task store shard (start members with --zk to run a cluster).'),
    );
    return;
  }
  const s = c.status || {};
  const members = s.members || [];
  view.replaceChildren(
    el('h1', {}, 'Cluster'),
    fields('cluster-fields', [
      ['Mode', c.mode, 'cluster-mode'],
      ['This member', s.self],
      ['Connected to ZooKeeper', s.connected ? 'yes' : 'no'],
      ['Leader', s.leader],
      ['Assignment version', s.version],
      ['Members', members.length],
    ]),
    table('members', ['Member', 'Address', 'Capacity', 'Slots', 'Task store shards'], members.map((m) => el('tr', { 'data-member': m.id },
      el('td', {}, m.id, m.id === s.self ? ' (this one)' : '', m.id === s.leader ? ' (leader)' : ''),
      el('td', {}, text(m.addr)),
      el('td', { class: 'num' }, text(m.capacity)),
      el('td', { class: 'num' }, text(m.slots)),
      el('td', {}, m.shards && m.shards.length ? m.shards.join(', ') : '—')))),
  );
}
