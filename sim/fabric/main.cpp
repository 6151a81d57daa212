// C++ main of the fabric model: clocks it, applies the run's configuration writes and
// samples every counter every K clocks. No per-cycle work but the clock and one
// comparison; Python (opengse.sim.fabric.runner) writes the run file and parses the
// output.
//
// Usage: fabric_sim RUN_FILE OUT_FILE
// RUN_FILE lines:  cycles N | sample K | reset R | progress SECONDS | w CYCLE ADDR DATA
//                  | r COUNT ADDR STAT [ADDR STAT ...]
//   (writes sorted by cycle; cycle counts from the end of reset; one write per clock:
//   a write whose cycle has passed goes out on the next free clock). An `r` line is a
//   read-out after the run (a histogram behind an address port): for k in 0..COUNT-1,
//   k is written to every ADDR, two clocks pass, and every output STAT (an index into
//   the sampled outputs) is read.
// OUT_FILE lines:  H name... (once) | S cycle value... (every K clocks and at the end)
//                  | R group k value... (read-outs, after the last S line)
// stderr:          P cycle total cycles_per_second (progress, every SECONDS wall)
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "verilated.h"
#include "fabric_ports.h"

struct Write {
    uint64_t cycle;
    uint32_t addr, data;
};

struct Readout {
    uint32_t count;
    std::vector<uint32_t> addr, stat;
};

static void die(const char* what, const char* arg) {
    fprintf(stderr, "fabric_sim: %s %s\n", what, arg ? arg : "");
    exit(2);
}

int main(int argc, char** argv) {
    if (argc != 3) die("usage: fabric_sim RUN_FILE OUT_FILE", nullptr);
    uint64_t cycles = 0, sample = 10000, reset = 16;
    double progress = 0.5;
    std::vector<Write> writes;
    std::vector<Readout> readouts;
    FILE* run = fopen(argv[1], "r");
    if (!run) die("cannot read", argv[1]);
    char line[256];
    while (fgets(line, sizeof line, run)) {
        char key[16];
        if (sscanf(line, "%15s", key) != 1 || key[0] == '#') continue;
        if (!strcmp(key, "cycles")) sscanf(line, "%*s %" SCNu64, &cycles);
        else if (!strcmp(key, "sample")) sscanf(line, "%*s %" SCNu64, &sample);
        else if (!strcmp(key, "reset")) sscanf(line, "%*s %" SCNu64, &reset);
        else if (!strcmp(key, "progress")) sscanf(line, "%*s %lf", &progress);
        else if (!strcmp(key, "w")) {
            Write w;
            if (sscanf(line, "%*s %" SCNu64 " %" SCNu32 " %" SCNu32, &w.cycle, &w.addr, &w.data) != 3)
                die("bad write line:", line);
            writes.push_back(w);
        } else if (!strcmp(key, "r")) {
            Readout r;
            int off = 0, n = 0;
            const char* p = line + 1;
            if (sscanf(p, "%" SCNu32 "%n", &r.count, &n) != 1) die("bad read-out line:", line);
            p += n;
            uint32_t a, st;
            while (sscanf(p, "%" SCNu32 " %" SCNu32 "%n", &a, &st, &off) == 2) {
                r.addr.push_back(a);
                r.stat.push_back(st);
                p += off;
            }
            readouts.push_back(r);
        } else die("unknown run-file key", key);
    }
    fclose(run);
    if (sample == 0) die("sample must be > 0", nullptr);
    FILE* out = fopen(argv[2], "w");
    if (!out) die("cannot write", argv[2]);

    auto ctx = std::make_unique<VerilatedContext>();
    auto top = std::make_unique<FABRIC_TOP>(ctx.get());
    std::vector<uint64_t> v(N_STATS);

    fprintf(out, "H");
    for (int i = 0; i < N_STATS; i++) fprintf(out, " %s", STAT_NAMES[i]);
    fprintf(out, "\n");

    top->clk = 0;
    top->rst = 1;
    top->cfg_valid = 0;
    for (uint64_t i = 0; i < reset; i++) {
        top->clk = 0; top->eval();
        top->clk = 1; top->eval();
    }
    top->rst = 0;

    auto t0 = std::chrono::steady_clock::now();
    auto last = t0;
    size_t next = 0;
    for (uint64_t c = 0; c < cycles; c++) {
        top->clk = 0;
        top->eval();
        if (next < writes.size() && writes[next].cycle <= c) {
            top->cfg_valid = 1;
            top->cfg_addr = writes[next].addr;
            top->cfg_data = writes[next].data;
            next++;
        } else {
            top->cfg_valid = 0;
        }
        top->clk = 1;
        top->eval();
        if ((c + 1) % sample == 0 || c + 1 == cycles) {
            read_stats(top.get(), v.data());
            fprintf(out, "S %" PRIu64, c + 1);
            for (int i = 0; i < N_STATS; i++) fprintf(out, " %" PRIu64, v[i]);
            fprintf(out, "\n");
            auto now = std::chrono::steady_clock::now();
            double dt = std::chrono::duration<double>(now - last).count();
            if (dt >= progress || c + 1 == cycles) {
                double all = std::chrono::duration<double>(now - t0).count();
                fprintf(stderr, "P %" PRIu64 " %" PRIu64 " %.0f\n", c + 1, cycles, all > 0 ? (c + 1) / all : 0.0);
                fflush(stderr);
                last = now;
            }
        }
    }
    auto tick = [&]() {
        top->clk = 0; top->eval();
        top->clk = 1; top->eval();
        top->clk = 0; top->cfg_valid = 0; top->eval();
    };
    for (size_t g = 0; g < readouts.size(); g++) {
        const Readout& r = readouts[g];
        for (uint32_t k = 0; k < r.count; k++) {
            for (size_t i = 0; i < r.addr.size(); i++) {
                top->cfg_valid = 1;
                top->cfg_addr = r.addr[i];
                top->cfg_data = k;
                top->clk = 0; top->eval();
                top->clk = 1; top->eval();
            }
            top->cfg_valid = 0;
            tick();
            tick();
            read_stats(top.get(), v.data());
            fprintf(out, "R %zu %" PRIu32, g, k);
            for (size_t i = 0; i < r.stat.size(); i++) {
                if (r.stat[i] >= (uint32_t)N_STATS) die("read-out stat index out of range", nullptr);
                fprintf(out, " %" PRIu64, v[r.stat[i]]);
            }
            fprintf(out, "\n");
        }
    }
    fclose(out);
    top->final();
    return 0;
}
