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
//
// A top with host streams (FabricTop hosts="stream", N_HOST_STREAMS > 0) also takes
//   hin N PATH   host N's frames, injected from cycle `hstart` on: records of
//                u32 length (little-endian) + the frame's bytes (DA .. payload)
//   hout N PATH  every frame host N receives: u64 first-beat cycle, u64 last-beat
//                cycle, u32 length, u32 flags (bit 0: tuser on the last beat), bytes
//   hstart C     the first cycle a host may start a frame (after configuration)
//   quiet Q      end the run once every input is sent and no host beat moved, in or
//                out, for Q cycles (`cycles` stays the limit)
// A host starts a frame only while its host<N>_pause is 0 (as a generator does), then
// sends one beat a clock while tready (the link's is always 1); frames back-to-back.
// After the run, OUT_FILE gets `I N frames_sent bytes_sent frames_left` per input host
// and `E end_cycle`.
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

static void die(const char* what, const char* arg) {
    fprintf(stderr, "fabric_sim: %s %s\n", what, arg ? arg : "");
    exit(2);
}

struct HostIn {
    std::vector<std::vector<uint8_t>> frames;
    size_t next = 0, pos = 0;  // frame being sent, its next byte
    bool active = false;
    uint64_t bytes = 0;
};

struct HostOut {
    FILE* f = nullptr;
    std::vector<uint8_t> buf;
    uint64_t first = 0;
};

static bool read_frames(const char* path, std::vector<std::vector<uint8_t>>& frames) {
    FILE* f = fopen(path, "rb");
    if (!f) return false;
    uint8_t h[4];
    while (fread(h, 1, 4, f) == 4) {
        uint32_t len = h[0] | (h[1] << 8) | (h[2] << 16) | ((uint32_t)h[3] << 24);
        std::vector<uint8_t> fr(len);
        if (len && fread(fr.data(), 1, len, f) != len) { fclose(f); return false; }
        frames.push_back(std::move(fr));
    }
    fclose(f);
    return true;
}

static void put_le(FILE* f, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) fputc((int)((v >> (8 * i)) & 0xFF), f);
}

// The path after "KEY N " on a run-file line (it may hold spaces).
static std::string rest_path(const char* line, int* n) {
    int off = 0;
    if (sscanf(line, "%*s %d %n", n, &off) != 1 || off == 0) die("bad host line:", line);
    std::string p(line + off);
    while (!p.empty() && (p.back() == '\n' || p.back() == '\r')) p.pop_back();
    return p;
}

struct Readout {
    uint32_t count;
    std::vector<uint32_t> addr, stat;
};

int main(int argc, char** argv) {
    if (argc != 3) die("usage: fabric_sim RUN_FILE OUT_FILE", nullptr);
    uint64_t cycles = 0, sample = 10000, reset = 16;
    double progress = 0.5;
    std::vector<Write> writes;
    std::vector<Readout> readouts;
    std::vector<HostIn> hin(N_HOST_STREAMS);
    std::vector<HostOut> hout(N_HOST_STREAMS);
    std::vector<bool> has_in(N_HOST_STREAMS, false);
    uint64_t hstart = 0, quiet = 0;
    FILE* run = fopen(argv[1], "r");
    if (!run) die("cannot read", argv[1]);
    char line[4096];
    while (fgets(line, sizeof line, run)) {
        char key[16];
        if (sscanf(line, "%15s", key) != 1 || key[0] == '#') continue;
        if (!strcmp(key, "cycles")) sscanf(line, "%*s %" SCNu64, &cycles);
        else if (!strcmp(key, "sample")) sscanf(line, "%*s %" SCNu64, &sample);
        else if (!strcmp(key, "reset")) sscanf(line, "%*s %" SCNu64, &reset);
        else if (!strcmp(key, "progress")) sscanf(line, "%*s %lf", &progress);
        else if (!strcmp(key, "hstart")) sscanf(line, "%*s %" SCNu64, &hstart);
        else if (!strcmp(key, "quiet")) sscanf(line, "%*s %" SCNu64, &quiet);
        else if (!strcmp(key, "hin") || !strcmp(key, "hout")) {
            int n = -1;
            std::string path = rest_path(line, &n);
            if (n < 0 || n >= N_HOST_STREAMS) die("host out of range:", line);
            if (key[1] == 'i') {
                if (!read_frames(path.c_str(), hin[n].frames)) die("cannot read frames from", path.c_str());
                has_in[n] = true;
            } else {
                hout[n].f = fopen(path.c_str(), "wb");
                if (!hout[n].f) die("cannot write", path.c_str());
            }
        } else if (!strcmp(key, "w")) {
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
    for (int n = 0; n < N_HOST_STREAMS; n++) host_out_ready(top.get(), n);
    uint64_t last_move = 0, end_cycle = cycles;

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
        bool stop = false;
        if (N_HOST_STREAMS) {
            bool pending = false;
            for (int n = 0; n < N_HOST_STREAMS; n++) {
                HostIn& h = hin[n];
                if (!h.active && c >= hstart && h.next < h.frames.size() && !host_pause(top.get(), n)) {
                    h.active = true;
                    h.pos = 0;
                }
                if (h.active) {
                    const std::vector<uint8_t>& fr = h.frames[h.next];
                    uint64_t d = 0;
                    size_t k = 0;
                    for (; k < 8 && h.pos + k < fr.size(); k++) d |= (uint64_t)fr[h.pos + k] << (8 * k);
                    host_in_set(top.get(), n, d, (1u << k) - 1, h.pos + k >= fr.size(), 1);
                } else {
                    host_in_set(top.get(), n, 0, 0, 0, 0);
                }
                pending |= h.next < h.frames.size();
            }
            top->eval();
            for (int n = 0; n < N_HOST_STREAMS; n++) {
                HostIn& h = hin[n];
                if (h.active && host_in_ready(top.get(), n)) {
                    size_t len = h.frames[h.next].size();
                    size_t k = len - h.pos < 8 ? len - h.pos : 8;
                    h.pos += k;
                    h.bytes += k;
                    last_move = c;
                    if (h.pos >= len) {
                        h.active = false;
                        h.next++;
                    }
                }
                uint64_t d;
                uint32_t keep;
                int last, user;
                if (host_out_get(top.get(), n, &d, &keep, &last, &user)) {
                    HostOut& o = hout[n];
                    if (o.buf.empty()) o.first = c;
                    for (int k = 0; k < 8; k++)
                        if (keep >> k & 1) o.buf.push_back((uint8_t)(d >> (8 * k)));
                    last_move = c;
                    if (last) {
                        if (o.f) {
                            put_le(o.f, o.first, 8);
                            put_le(o.f, c, 8);
                            put_le(o.f, o.buf.size(), 4);
                            put_le(o.f, user & 1, 4);
                            fwrite(o.buf.data(), 1, o.buf.size(), o.f);
                        }
                        o.buf.clear();
                    }
                }
            }
            stop = quiet && !pending && c >= hstart && c - last_move >= quiet && c - hstart >= quiet;
        }
        top->clk = 1;
        top->eval();
        if (stop) end_cycle = c + 1;
        if ((c + 1) % sample == 0 || c + 1 == cycles || stop) {
            read_stats(top.get(), v.data());
            fprintf(out, "S %" PRIu64, c + 1);
            for (int i = 0; i < N_STATS; i++) fprintf(out, " %" PRIu64, v[i]);
            fprintf(out, "\n");
            auto now = std::chrono::steady_clock::now();
            double dt = std::chrono::duration<double>(now - last).count();
            if (dt >= progress || c + 1 == cycles || stop) {
                double all = std::chrono::duration<double>(now - t0).count();
                fprintf(stderr, "P %" PRIu64 " %" PRIu64 " %.0f\n", c + 1, cycles, all > 0 ? (c + 1) / all : 0.0);
                fflush(stderr);
                last = now;
            }
        }
        if (stop) break;
    }
    for (int n = 0; n < N_HOST_STREAMS; n++) {
        if (has_in[n])
            fprintf(out, "I %d %zu %" PRIu64 " %zu\n", n, hin[n].next, hin[n].bytes, hin[n].frames.size() - hin[n].next);
        if (hout[n].f) fclose(hout[n].f);
    }
    if (N_HOST_STREAMS) fprintf(out, "E %" PRIu64 "\n", end_cycle);
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
