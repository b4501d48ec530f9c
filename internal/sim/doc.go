// Package sim holds the simulator (issue 20) and nothing else: its tests
// drive httpretry through its public API alone, against in-memory
// origins whose bodies and faults are internal/fakeorigin's, one seed at
// a time in virtual time.
// It is a package of its own so that it runs beside the root's tests,
// not inside their binary, and so that the compiler keeps it black-box.
//
// A quarter of the seeds run the outage scenario of DESIGN point 22 (an
// open or closed loop through an outage, with and without deadlines,
// under every Hold); every seed is checked against point 22's invariants
// beside the others.
//
// make test runs 1,500 seeds (-short); make sim runs as many as SEEDS
// asks; a failing seed prints the command that replays it.
package sim
