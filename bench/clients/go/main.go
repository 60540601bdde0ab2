// SPDX-License-Identifier: Apache-2.0

// Command go measures what the Go client costs over net/http alone:
// each round makes N POST /check-login calls of each, alternating which
// goes first, and one JSON line reports the per-round median wall time
// and the process CPU time per call, in microseconds.
//
//	go run . BASE_URL [ROUNDS=7] [CALLS=2000]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"syscall"
	"time"

	abuseguard "github.com/abuseguard/abuseguard/clients/go"
)

// body is the check both sides send.
type body struct {
	User string `json:"user"`
	IP   string `json:"ip"`
}

func checkOf(round, i int) body {
	// Users and addresses of this language's own (10.3.<round>.x), each
	// address at most 16 calls a round: no policy trips.
	return body{fmt.Sprintf("bench-go-%d-%d@example.com", round, i), fmt.Sprintf("10.3.%d.%d", round, i%250+1)}
}

// call makes the i-th call of a round.
type call func(b body) error

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bench BASE_URL [ROUNDS] [CALLS]")
		os.Exit(2)
	}
	base := os.Args[1]
	rounds, calls := argInt(2, 7), argInt(3, 2000)

	// The raw side: one kept-alive connection, the answer read whole and
	// parsed as JSON, as any caller of net/http would.
	raw := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	rawCall := func(b body) error {
		payload, _ := json.Marshal(b)
		resp, err := raw.Post(base+"/check-login", "application/json", bytes.NewReader(payload))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		answer, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		var v map[string]any
		return json.Unmarshal(answer, &v)
	}
	client, err := abuseguard.New(abuseguard.Options{BaseURL: base})
	if err != nil {
		fail(err)
	}
	clientCall := func(b body) error {
		v, err := client.CheckLogin(context.Background(), abuseguard.LoginCheck{User: b.User, IP: b.IP})
		if err == nil && v.Failed != "" {
			err = fmt.Errorf("no answer: %s", v.Failed)
		}
		return err
	}

	out := map[string]any{"lang": "go"}
	var rawUS, clientUS, rawCPU, clientCPU []float64
	for r := 0; r < rounds; r++ {
		sides := []struct {
			do        call
			wall, cpu *[]float64
		}{{rawCall, &rawUS, &rawCPU}, {clientCall, &clientUS, &clientCPU}}
		if r%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, side := range sides {
			wall, cpu := measure(side.do, r, calls)
			*side.wall = append(*side.wall, wall)
			*side.cpu = append(*side.cpu, cpu)
		}
	}
	out["raw_us"], out["client_us"], out["raw_cpu_us"], out["client_cpu_us"] = rawUS, clientUS, rawCPU, clientCPU
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
}

// measure runs one side's calls of a round: the median wall time of a
// call and the process CPU time per call, both in microseconds.
func measure(do call, round, calls int) (wallUS, cpuUS float64) {
	walls := make([]float64, calls)
	cpu0 := cpuTime()
	for i := 0; i < calls; i++ {
		start := time.Now()
		if err := do(checkOf(round, i)); err != nil {
			fail(err)
		}
		walls[i] = float64(time.Since(start).Nanoseconds()) / 1e3
	}
	cpu := cpuTime() - cpu0
	sort.Float64s(walls)
	median := walls[calls/2]
	if calls%2 == 0 {
		median = (walls[calls/2-1] + walls[calls/2]) / 2
	}
	return median, float64(cpu.Nanoseconds()) / 1e3 / float64(calls)
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fail(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func argInt(i, def int) int {
	if len(os.Args) <= i {
		return def
	}
	n, err := strconv.Atoi(os.Args[i])
	if err != nil || n < 1 {
		fail(fmt.Errorf("argument %d: want a positive number, got %q", i, os.Args[i]))
	}
	return n
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
