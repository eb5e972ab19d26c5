// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Minimal Uniswap V2 and V3 stand-ins for the DEX price tests (issue 18).
/// They emit exactly Uniswap's events (same canonical signatures, same indexed
/// params, same order of logs within a transaction), so an indexer cannot tell
/// them from the real contracts; the maths is simplified where no event depends on it.

interface IDexToken {
    function balanceOf(address owner) external view returns (uint256);
    function transfer(address to, uint256 value) external returns (bool);
    function transferFrom(address from, address to, uint256 value) external returns (bool);
}

/// UniswapV2Factory: createPair sorts the tokens and emits PairCreated with allPairs.length.
contract TestV2Factory {
    mapping(address => mapping(address => address)) public getPair;
    address[] public allPairs;

    event PairCreated(address indexed token0, address indexed token1, address pair, uint);

    function allPairsLength() external view returns (uint) {
        return allPairs.length;
    }

    function createPair(address tokenA, address tokenB) external returns (address pair) {
        require(tokenA != tokenB, "UniswapV2: IDENTICAL_ADDRESSES");
        (address token0, address token1) = tokenA < tokenB ? (tokenA, tokenB) : (tokenB, tokenA);
        require(token0 != address(0), "UniswapV2: ZERO_ADDRESS");
        require(getPair[token0][token1] == address(0), "UniswapV2: PAIR_EXISTS");
        pair = address(new TestV2Pair(token0, token1));
        getPair[token0][token1] = pair;
        getPair[token1][token0] = pair;
        allPairs.push(pair);
        emit PairCreated(token0, token1, pair, allPairs.length);
    }
}

/// UniswapV2Pair without price accumulators, protocol fee or flash swaps. Like the
/// real pair it is its own LP token (Transfer events on mint and burn, 1000 wei
/// of liquidity locked at address(0) on the first mint).
contract TestV2Pair {
    uint public constant MINIMUM_LIQUIDITY = 10 ** 3;

    string public constant name = "Uniswap V2";
    string public constant symbol = "UNI-V2";
    uint8 public constant decimals = 18;
    uint public totalSupply;
    mapping(address => uint) public balanceOf;
    mapping(address => mapping(address => uint)) public allowance;

    address public factory;
    address public token0;
    address public token1;

    uint112 private reserve0;
    uint112 private reserve1;
    uint32 private blockTimestampLast;
    uint private unlocked = 1;

    event Transfer(address indexed from, address indexed to, uint value);
    event Approval(address indexed owner, address indexed spender, uint value);
    event Mint(address indexed sender, uint amount0, uint amount1);
    event Burn(address indexed sender, uint amount0, uint amount1, address indexed to);
    event Swap(address indexed sender, uint amount0In, uint amount1In, uint amount0Out, uint amount1Out, address indexed to);
    event Sync(uint112 reserve0, uint112 reserve1);

    modifier lock() {
        require(unlocked == 1, "UniswapV2: LOCKED");
        unlocked = 0;
        _;
        unlocked = 1;
    }

    constructor(address token0_, address token1_) {
        factory = msg.sender;
        token0 = token0_;
        token1 = token1_;
    }

    function getReserves() public view returns (uint112 _reserve0, uint112 _reserve1, uint32 _blockTimestampLast) {
        return (reserve0, reserve1, blockTimestampLast);
    }

    // LP token (needed to send liquidity back to the pair before burn).
    function approve(address spender, uint value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transfer(address to, uint value) external returns (bool) {
        _transferLp(msg.sender, to, value);
        return true;
    }

    function transferFrom(address from, address to, uint value) external returns (bool) {
        if (allowance[from][msg.sender] != type(uint).max) allowance[from][msg.sender] -= value;
        _transferLp(from, to, value);
        return true;
    }

    function _transferLp(address from, address to, uint value) private {
        balanceOf[from] -= value;
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }

    function _mintLp(address to, uint value) private {
        totalSupply += value;
        balanceOf[to] += value;
        emit Transfer(address(0), to, value);
    }

    function _burnLp(address from, uint value) private {
        balanceOf[from] -= value;
        totalSupply -= value;
        emit Transfer(from, address(0), value);
    }

    function _safeTransfer(address token, address to, uint value) private {
        require(IDexToken(token).transfer(to, value), "UniswapV2: TRANSFER_FAILED");
    }

    /// Every state change ends here, so Sync precedes the Mint/Burn/Swap event of the same call.
    function _update(uint balance0, uint balance1) private {
        require(balance0 <= type(uint112).max && balance1 <= type(uint112).max, "UniswapV2: OVERFLOW");
        reserve0 = uint112(balance0);
        reserve1 = uint112(balance1);
        blockTimestampLast = uint32(block.timestamp);
        emit Sync(reserve0, reserve1);
    }

    /// Liquidity is whatever was transferred in since the last update.
    function mint(address to) external lock returns (uint liquidity) {
        (uint112 _reserve0, uint112 _reserve1, ) = getReserves();
        uint balance0 = IDexToken(token0).balanceOf(address(this));
        uint balance1 = IDexToken(token1).balanceOf(address(this));
        uint amount0 = balance0 - _reserve0;
        uint amount1 = balance1 - _reserve1;
        uint _totalSupply = totalSupply;
        if (_totalSupply == 0) {
            liquidity = _sqrt(amount0 * amount1) - MINIMUM_LIQUIDITY;
            _mintLp(address(0), MINIMUM_LIQUIDITY);
        } else {
            uint l0 = (amount0 * _totalSupply) / _reserve0;
            uint l1 = (amount1 * _totalSupply) / _reserve1;
            liquidity = l0 < l1 ? l0 : l1;
        }
        require(liquidity > 0, "UniswapV2: INSUFFICIENT_LIQUIDITY_MINTED");
        _mintLp(to, liquidity);
        _update(balance0, balance1);
        emit Mint(msg.sender, amount0, amount1);
    }

    /// Burns the LP tokens held by the pair itself (sent in first, as with the real pair).
    function burn(address to) external lock returns (uint amount0, uint amount1) {
        address _token0 = token0;
        address _token1 = token1;
        uint balance0 = IDexToken(_token0).balanceOf(address(this));
        uint balance1 = IDexToken(_token1).balanceOf(address(this));
        uint liquidity = balanceOf[address(this)];
        uint _totalSupply = totalSupply;
        amount0 = (liquidity * balance0) / _totalSupply;
        amount1 = (liquidity * balance1) / _totalSupply;
        require(amount0 > 0 && amount1 > 0, "UniswapV2: INSUFFICIENT_LIQUIDITY_BURNED");
        _burnLp(address(this), liquidity);
        _safeTransfer(_token0, to, amount0);
        _safeTransfer(_token1, to, amount1);
        _update(IDexToken(_token0).balanceOf(address(this)), IDexToken(_token1).balanceOf(address(this)));
        emit Burn(msg.sender, amount0, amount1, to);
    }

    /// Uniswap V2's swap: the input is sent in first and read from the balances; the
    /// 0.3% fee is enforced by the K check. `data` (flash swaps) is ignored.
    function swap(uint amount0Out, uint amount1Out, address to, bytes calldata data) external lock {
        data;
        require(amount0Out > 0 || amount1Out > 0, "UniswapV2: INSUFFICIENT_OUTPUT_AMOUNT");
        (uint112 _reserve0, uint112 _reserve1, ) = getReserves();
        require(amount0Out < _reserve0 && amount1Out < _reserve1, "UniswapV2: INSUFFICIENT_LIQUIDITY");
        uint balance0;
        uint balance1;
        {
            // Scoped, as in Uniswap, to stay within the stack limit.
            address _token0 = token0;
            address _token1 = token1;
            require(to != _token0 && to != _token1, "UniswapV2: INVALID_TO");
            if (amount0Out > 0) _safeTransfer(_token0, to, amount0Out);
            if (amount1Out > 0) _safeTransfer(_token1, to, amount1Out);
            balance0 = IDexToken(_token0).balanceOf(address(this));
            balance1 = IDexToken(_token1).balanceOf(address(this));
        }
        uint amount0In = balance0 > _reserve0 - amount0Out ? balance0 - (_reserve0 - amount0Out) : 0;
        uint amount1In = balance1 > _reserve1 - amount1Out ? balance1 - (_reserve1 - amount1Out) : 0;
        require(amount0In > 0 || amount1In > 0, "UniswapV2: INSUFFICIENT_INPUT_AMOUNT");
        {
            uint balance0Adjusted = balance0 * 1000 - amount0In * 3;
            uint balance1Adjusted = balance1 * 1000 - amount1In * 3;
            require(balance0Adjusted * balance1Adjusted >= uint(_reserve0) * _reserve1 * 1000 ** 2, "UniswapV2: K");
        }
        _update(balance0, balance1);
        emit Swap(msg.sender, amount0In, amount1In, amount0Out, amount1Out, to);
    }

    function sync() external lock {
        _update(IDexToken(token0).balanceOf(address(this)), IDexToken(token1).balanceOf(address(this)));
    }

    function _sqrt(uint y) private pure returns (uint z) {
        if (y > 3) {
            z = y;
            uint x = y / 2 + 1;
            while (x < z) {
                z = x;
                x = (y / x + x) / 2;
            }
        } else if (y != 0) {
            z = 1;
        }
    }
}

/// UniswapV2Router02's swapExactTokensForTokens (same signature and log order):
/// the input moves from the caller to the first pair, then each pair swaps into
/// the next (the last into `to`), all in one transaction whose sender is the trader.
contract TestV2Router {
    TestV2Factory public immutable factory;

    constructor(TestV2Factory factory_) {
        factory = factory_;
    }

    function getAmountOut(uint amountIn, uint reserveIn, uint reserveOut) public pure returns (uint) {
        require(amountIn > 0, "UniswapV2Library: INSUFFICIENT_INPUT_AMOUNT");
        require(reserveIn > 0 && reserveOut > 0, "UniswapV2Library: INSUFFICIENT_LIQUIDITY");
        uint amountInWithFee = amountIn * 997;
        return (amountInWithFee * reserveOut) / (reserveIn * 1000 + amountInWithFee);
    }

    function getAmountsOut(uint amountIn, address[] memory path) public view returns (uint[] memory amounts) {
        require(path.length >= 2, "UniswapV2Library: INVALID_PATH");
        amounts = new uint[](path.length);
        amounts[0] = amountIn;
        for (uint i; i < path.length - 1; i++) {
            TestV2Pair pair = TestV2Pair(_pairFor(path[i], path[i + 1]));
            (uint112 reserve0, uint112 reserve1, ) = pair.getReserves();
            (uint reserveIn, uint reserveOut) = path[i] == pair.token0() ? (reserve0, reserve1) : (reserve1, reserve0);
            amounts[i + 1] = getAmountOut(amounts[i], reserveIn, reserveOut);
        }
    }

    function swapExactTokensForTokens(uint amountIn, uint amountOutMin, address[] calldata path, address to, uint deadline) external returns (uint[] memory amounts) {
        require(deadline >= block.timestamp, "UniswapV2Router: EXPIRED");
        amounts = getAmountsOut(amountIn, path);
        require(amounts[amounts.length - 1] >= amountOutMin, "UniswapV2Router: INSUFFICIENT_OUTPUT_AMOUNT");
        require(IDexToken(path[0]).transferFrom(msg.sender, _pairFor(path[0], path[1]), amounts[0]), "TransferHelper: TRANSFER_FROM_FAILED");
        for (uint i; i < path.length - 1; i++) {
            address pair = _pairFor(path[i], path[i + 1]);
            uint amountOut = amounts[i + 1];
            (uint amount0Out, uint amount1Out) = path[i] == TestV2Pair(pair).token0() ? (uint(0), amountOut) : (amountOut, uint(0));
            address next = i < path.length - 2 ? _pairFor(path[i + 1], path[i + 2]) : to;
            TestV2Pair(pair).swap(amount0Out, amount1Out, next, new bytes(0));
        }
    }

    function _pairFor(address a, address b) private view returns (address pair) {
        pair = factory.getPair(a, b);
        require(pair != address(0), "UniswapV2Library: NO_PAIR");
    }
}

/// UniswapV3Factory: the three default fee tiers and their tick spacings.
contract TestV3Factory {
    mapping(uint24 => int24) public feeAmountTickSpacing;
    mapping(address => mapping(address => mapping(uint24 => address))) public getPool;

    event PoolCreated(address indexed token0, address indexed token1, uint24 indexed fee, int24 tickSpacing, address pool);

    constructor() {
        feeAmountTickSpacing[500] = 10;
        feeAmountTickSpacing[3000] = 60;
        feeAmountTickSpacing[10000] = 200;
    }

    function createPool(address tokenA, address tokenB, uint24 fee) external returns (address pool) {
        require(tokenA != tokenB);
        (address token0, address token1) = tokenA < tokenB ? (tokenA, tokenB) : (tokenB, tokenA);
        require(token0 != address(0));
        int24 tickSpacing = feeAmountTickSpacing[fee];
        require(tickSpacing != 0);
        require(getPool[token0][token1][fee] == address(0));
        pool = address(new TestV3Pool(token0, token1, fee, tickSpacing));
        getPool[token0][token1][fee] = pool;
        getPool[token1][token0][fee] = pool;
        emit PoolCreated(token0, token1, fee, tickSpacing, pool);
    }
}

/// UniswapV3Pool reduced to its price state: the test drives each swap with explicit
/// amounts and the post-swap price. Liquidity is added by plain token transfers
/// (the pool's token balances are its reserves); `liquidity()` is set by the test.
contract TestV3Pool {
    struct Slot0 {
        uint160 sqrtPriceX96;
        int24 tick;
        uint16 observationIndex;
        uint16 observationCardinality;
        uint16 observationCardinalityNext;
        uint8 feeProtocol;
        bool unlocked;
    }

    address public immutable factory;
    address public immutable token0;
    address public immutable token1;
    uint24 public immutable fee;
    int24 public immutable tickSpacing;

    Slot0 public slot0;
    uint128 public liquidity;

    event Initialize(uint160 sqrtPriceX96, int24 tick);
    event Swap(address indexed sender, address indexed recipient, int256 amount0, int256 amount1, uint160 sqrtPriceX96, uint128 liquidity, int24 tick);

    constructor(address token0_, address token1_, uint24 fee_, int24 tickSpacing_) {
        factory = msg.sender;
        token0 = token0_;
        token1 = token1_;
        fee = fee_;
        tickSpacing = tickSpacing_;
    }

    /// As the real pool: once, with the caller's price and tick (the real one derives the tick).
    function initialize(uint160 sqrtPriceX96, int24 tick) external {
        require(slot0.sqrtPriceX96 == 0, "AI");
        slot0 = Slot0({sqrtPriceX96: sqrtPriceX96, tick: tick, observationIndex: 0, observationCardinality: 1, observationCardinalityNext: 1, feeProtocol: 0, unlocked: true});
        emit Initialize(sqrtPriceX96, tick);
    }

    function setLiquidity(uint128 liquidity_) external {
        liquidity = liquidity_;
    }

    /// A swap with the caller's numbers. Log order as the real pool with a router:
    /// output Transfer, then input Transfer (the real pool's callback), then Swap.
    /// amount0/amount1 are the pool's balance deltas (positive = into the pool).
    function swapExact(bool zeroForOne, uint256 amountIn, uint256 amountOut, uint160 sqrtPriceX96After, int24 tickAfter, address recipient) external {
        Slot0 memory s = slot0;
        require(s.unlocked, "LOK");
        require(amountIn > 0 && amountIn <= uint256(type(int256).max) && amountOut <= uint256(type(int256).max), "AS");
        // Selling token0 lowers the price of token0 in token1, and the reverse.
        require(zeroForOne ? sqrtPriceX96After < s.sqrtPriceX96 : sqrtPriceX96After > s.sqrtPriceX96, "SPL");
        (address tokenIn, address tokenOut) = zeroForOne ? (token0, token1) : (token1, token0);
        if (amountOut > 0) require(IDexToken(tokenOut).transfer(recipient, amountOut), "TF");
        uint256 before = IDexToken(tokenIn).balanceOf(address(this));
        require(IDexToken(tokenIn).transferFrom(msg.sender, address(this), amountIn), "TF");
        require(IDexToken(tokenIn).balanceOf(address(this)) >= before + amountIn, "IIA");
        slot0.sqrtPriceX96 = sqrtPriceX96After;
        slot0.tick = tickAfter;
        (int256 amount0, int256 amount1) = zeroForOne ? (int256(amountIn), -int256(amountOut)) : (-int256(amountOut), int256(amountIn));
        emit Swap(msg.sender, recipient, amount0, amount1, sqrtPriceX96After, liquidity, tickAfter);
    }
}
