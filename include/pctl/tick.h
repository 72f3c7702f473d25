/* The manager's tick (manager/tick.c): refresh → sense → estimate → stacks → observe → decide →
 * place → apply, one call per stage. pctld runs a sample tick every interval and a decision
 * tick every decision period; `pctl sim run --policy` runs them in virtual time. */
#pragma once

struct manager;

/* One sampling interval: read the sensor, update estimates, drop apps that exited. */
int manager_sample(struct manager *m);
/* One decision: adopt processes matching a policy, then decide and apply. */
int manager_decide(struct manager *m);
