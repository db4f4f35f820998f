// The least CPU an open-model load generator can spend per request on this machine: one keep-alive
// connection, a timerfd for each arrival (5,000 a second), one send and one receive, nothing recorded.
// Two ways, as ci/bench-engine.sh prints them beside degrade's figure:
//   woken    the process sleeps until each answer arrives, as a generator that times answers when it reads
//            them must: two wake-ups per request (its arrival, then its answer);
//   stamped  the answer is read on the next arrival's wake-up, its time the kernel's stamp (SO_TIMESTAMPNS),
//            as degrade's open model does: one wake-up per request.
//   ticked   the arrivals of each millisecond go out together at its end, each on its own connection, and the
//            answers are read on the next tick: one wake-up per five requests, each request up to 1 ms late
//            (what a generator pacing on a millisecond timer, as oha does, spends at best).
// Wake-ups are most of the cost on a virtual machine: setting the timer and waking the idle target's core each
// make the CPU leave the guest for its hypervisor (a VM exit), so a request costs at least two of them.
//   exit     (x86-64 only, no PORT) prints what one VM exit costs here, in us: cpuid always exits. Bare
//            metal answers in tens of nanoseconds, a VM on a bare host in about one microsecond, a VM nested
//            in another in ten or more.
// Usage: open-model-floor PORT REQUESTS woken|stamped|ticked   (sends to 127.0.0.1:PORT only)
//        open-model-floor exit
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

// Microseconds per cpuid instruction, which a virtual machine's CPU hands to its hypervisor every time.
static int print_exit_cost(void) {
#if defined(__x86_64__)
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0; i < 100000; i++) {
        unsigned eax = 0, ebx, ecx = 0, edx;
        __asm__ volatile("cpuid" : "+a"(eax), "=b"(ebx), "+c"(ecx), "=d"(edx));
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    printf("%.2f\n", ((end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec)) / 100000 / 1000);
    return 0;
#else
    return 2;
#endif
}

static void wait_for(int epoll, int fd) {
    struct epoll_event event;
    do {
        epoll_wait(epoll, &event, 1, -1);
    } while (event.data.fd != fd);
}

// A keep-alive connection to 127.0.0.1:port, its answers stamped by the kernel.
static int connect_to(int port) {
    int sock = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(sock, (struct sockaddr *)&address, sizeof address) != 0) return -1;
    int one = 1;
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(sock, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    return sock;
}

// Reads whatever answer has arrived on `sock`, without waiting; 0 when the peer closed.
static int read_arrived(int sock) {
    char answer[4096], control[64];
    struct iovec part = {answer, sizeof answer};
    struct msghdr message = {.msg_iov = &part, .msg_iovlen = 1, .msg_control = control,
                             .msg_controllen = sizeof control};
    return recvmsg(sock, &message, MSG_DONTWAIT) != 0;
}

// Microseconds of CPU per request so far.
static void print_cpu(int requests) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double micros = usage.ru_utime.tv_sec * 1e6 + usage.ru_utime.tv_usec + usage.ru_stime.tv_sec * 1e6 +
                    usage.ru_stime.tv_usec;
    printf("%.1f\n", micros / requests);
}

// The ticked way: every millisecond, read the answers that came and send the five arrivals it held.
static int ticked(int port, int requests) {
    enum { PER_TICK = 5 };
    int socks[PER_TICK];
    for (int c = 0; c < PER_TICK; c++)
        if ((socks[c] = connect_to(port)) < 0) return 1;
    int timer = timerfd_create(CLOCK_MONOTONIC, 0);
    struct itimerspec every = {{0, 1000000}, {0, 1000000}};
    timerfd_settime(timer, 0, &every, NULL);
    const char *request = "GET /e1 HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n";
    for (int sent = 0; sent < requests; sent += PER_TICK) {
        unsigned long long rang;
        if (read(timer, &rang, sizeof rang) < 0) return 1;
        for (int c = 0; c < PER_TICK; c++) {
            if (sent > 0 && !read_arrived(socks[c])) return 1;
            if (send(socks[c], request, strlen(request), 0) < 0) return 1;
        }
    }
    print_cpu(requests);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "exit") == 0) return print_exit_cost();
    if (argc != 4) return 2;
    int requests = atoi(argv[2]);
    if (strcmp(argv[3], "ticked") == 0) return ticked(atoi(argv[1]), requests);
    int stamped = strcmp(argv[3], "stamped") == 0;
    int sock = connect_to(atoi(argv[1]));
    if (sock < 0) return 1;
    int timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    int epoll = epoll_create1(0);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = timer};
    epoll_ctl(epoll, EPOLL_CTL_ADD, timer, &event);
    // Stamped, the socket is watched for room to write only, so an answer arriving wakes nothing.
    event.events = stamped ? EPOLLOUT | EPOLLET : EPOLLIN;
    event.data.fd = sock;
    epoll_ctl(epoll, EPOLL_CTL_ADD, sock, &event);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long next = now.tv_sec * 1000000000LL + now.tv_nsec;
    const char *request = "GET /e1 HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n";
    char answer[4096];
    for (int i = 0; i < requests; i++) {
        next += 200000;
        struct itimerspec at = {{0, 0}, {next / 1000000000LL, next % 1000000000LL}};
        timerfd_settime(timer, TFD_TIMER_ABSTIME, &at, NULL);
        wait_for(epoll, timer);
        unsigned long long rang;
        if (read(timer, &rang, sizeof rang) < 0) return 1;
        // The previous answer, if it came (a slower one is read on a later arrival).
        if (stamped && i > 0 && !read_arrived(sock)) return 1;
        if (send(sock, request, strlen(request), 0) < 0) return 1;
        if (!stamped) {
            wait_for(epoll, sock);
            if (recv(sock, answer, sizeof answer, 0) <= 0) return 1;
        }
    }
    print_cpu(requests);
    return 0;
}
