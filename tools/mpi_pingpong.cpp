// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * mroce_mpi_pingpong - a two-rank MPI ping-pong with verified payloads, for
 * Open MPI over UCX over mroce (selftests/mroce/test_ucx.sh).
 *
 *   mpirun -np 2 ... mroce_mpi_pingpong [SIZE [ITERS]]
 *
 * Rank 0 sends ITERS messages of SIZE bytes, each with a pattern derived
 * from the iteration, rank 1 checks every byte and returns the message with
 * each byte incremented, rank 0 checks the reply.  Rank 0 prints
 * "pingpong: SIZE bytes x ITERS iterations, N errors, latency X us,
 * bandwidth Y MB/s" and then "pingpong: OK" when nothing was wrong; the
 * exit status is non-zero on any error.
 */
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

// MPI_Init/MPI_Finalize as a scope.
class MpiSession {
public:
	MpiSession(int *argc, char ***argv) { MPI_Init(argc, argv); }
	~MpiSession() { MPI_Finalize(); }
	MpiSession(const MpiSession &) = delete;
	MpiSession &operator=(const MpiSession &) = delete;
};

uint8_t pattern(long iter, size_t i)
{
	return static_cast<uint8_t>((iter * 131 + static_cast<long>(i) * 7) & 0xff);
}

} // namespace

int main(int argc, char **argv)
{
	MpiSession mpi(&argc, &argv);
	int rank = 0, size = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	const size_t len = argc > 1 ? std::strtoul(argv[1], nullptr, 0) : 4096;
	const long iters = argc > 2 ? std::strtol(argv[2], nullptr, 0) : 100;
	if (size != 2 || len == 0 || iters <= 0) {
		if (rank == 0)
			std::fprintf(stderr, "pingpong: needs exactly 2 ranks, SIZE > 0, ITERS > 0\n");
		return 2;
	}

	std::vector<uint8_t> buf(len);
	long errors = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	const double t0 = MPI_Wtime();
	for (long it = 0; it < iters; it++) {
		if (rank == 0) {
			for (size_t i = 0; i < len; i++)
				buf[i] = pattern(it, i);
			MPI_Send(buf.data(), static_cast<int>(len), MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(buf.data(), static_cast<int>(len), MPI_BYTE, 1, 2, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			for (size_t i = 0; i < len; i++)
				if (buf[i] != static_cast<uint8_t>(pattern(it, i) + 1))
					errors++;
		} else {
			MPI_Status st;
			int got = 0;
			MPI_Recv(buf.data(), static_cast<int>(len), MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
			MPI_Get_count(&st, MPI_BYTE, &got);
			if (static_cast<size_t>(got) != len)
				errors++;
			for (size_t i = 0; i < len; i++) {
				if (buf[i] != pattern(it, i))
					errors++;
				buf[i]++;
			}
			MPI_Send(buf.data(), static_cast<int>(len), MPI_BYTE, 0, 2, MPI_COMM_WORLD);
		}
	}
	const double dt = MPI_Wtime() - t0;
	long total = 0;
	MPI_Reduce(&errors, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		// One iteration moves the message there and back.
		std::printf("pingpong: %zu bytes x %ld iterations, %ld errors, latency %.1f us, bandwidth %.2f MB/s\n",
			    len, iters, total, dt / iters / 2 * 1e6,
			    2.0 * static_cast<double>(len) * iters / dt / 1e6);
		if (total == 0)
			std::printf("pingpong: OK\n");
		std::fflush(stdout);
	}
	return total == 0 ? 0 : 1;
}
